package iostreams

import (
	"bytes"
	"sync"
)

// SyncBuffer is a bytes.Buffer that goroutines may write while another reads it: a stream for
// tests whose code under test writes from goroutines of its own (loggers, child processes).
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns everything written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
