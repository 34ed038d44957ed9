-- 0017: secret values that left the state (their volume, snapshot or plugin env deleted or
-- changed) while data a plugin returned for another record still holds them (a publish
-- context, a volume context, an external or node ID: kept raw, to be sent back as it is).
-- SecretValues reads them with the rest, so what prints that data still scrubs them; each is
-- let go by the first transaction that takes secrets out and finds no such data holding it
-- (forget.go, keepHeld).
CREATE TABLE kept_secrets (
    value TEXT NOT NULL PRIMARY KEY
) STRICT;
