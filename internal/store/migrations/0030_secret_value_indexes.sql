-- 0030: the columns secret values are read from, each in an index of the rows that have them:
-- the volumes' secrets and mount options, live and freed claims' mount flags. Every listing
-- that prints a volume's names scrubs them of the state's secrets, which it reads first
-- (Tx.SecretValues: a SELECT DISTINCT of each column). Read from the tables, the four walked
-- every volume's and every claim's whole row, 10,000 volumes and a full claim history 14 ms of
-- CPU; read from these, which hold nothing but the column and no row without it, a fraction of
-- that (BenchmarkSecretValues10k, BENCHMARKS.md).
CREATE INDEX volumes_secrets ON volumes (secrets) WHERE secrets IS NOT NULL;
CREATE INDEX volumes_mount_options ON volumes (mount_options) WHERE mount_options IS NOT NULL;
CREATE INDEX claims_mount_flags ON claims (mount_flags) WHERE mount_flags IS NOT NULL;
CREATE INDEX claim_history_mount_flags ON claim_history (mount_flags) WHERE mount_flags IS NOT NULL;
