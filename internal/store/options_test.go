package store

import "time"

// Options only tests use: volctl itself runs with the defaults.

// WithBusyTimeout sets how long a transaction waits for another process's write lock before
// failing; the default is DefaultBusyTimeout.
func WithBusyTimeout(d time.Duration) Option { return func(o *options) { o.busyTimeout = d } }

// WithEventLimit sets how many of the newest events the log keeps; the default is DefaultEventLimit.
func WithEventLimit(n int) Option { return func(o *options) { o.eventLimit = n } }

// WithHistoryLimit sets how many freed claims the history keeps; the default is DefaultHistoryLimit.
func WithHistoryLimit(n int) Option { return func(o *options) { o.historyLimit = n } }

// SchemaVersion is the schema version this binary writes.
func SchemaVersion() int { return len(migrations) }
