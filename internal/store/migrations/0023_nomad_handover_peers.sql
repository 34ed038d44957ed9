-- 0023: the cluster a handover mark's registration went to, as its servers (Raft peers,
-- GET /v1/status/peers, "10.0.0.1:4647" each) answered the handover, comma-separated; '' when
-- not known (marks made before, a proxy that passes only the volume API). A take-back whose
-- Nomad names none of them as its servers is answered by another cluster (a balancer that
-- keeps a client on one cluster, then moves it), whose 404 is not the word of the one the
-- volume was handed to (engine/handover.go, nomad.Client.VolumeOfOneCluster).
ALTER TABLE nomad_handovers ADD COLUMN nomad_peers TEXT NOT NULL DEFAULT '';
