# A group of allocs that use volumes, shaped like a Nomad job group.
#   volctl validate group.hcl
#   volctl group run group.hcl

group "web" {
  # How many allocs to run: web[0], web[1], ...
  count = 1

  # A volume each alloc claims.
  volume "data" {
    type   = "csi"
    source = "data" # the volume's id

    # With per_alloc = true, alloc web[N] claims the volume "data[N]" instead: a
    # single-node access mode needs that when count > 1.
    per_alloc = false

    # Reader-only access modes need read_only = true.
    read_only       = false
    access_mode     = "single-node-writer"
    attachment_mode = "file-system"

    # Optional, file-system volumes only: override the volume's mount options.
    # mount_options {
    #   fs_type     = "ext4"
    #   mount_flags = ["noatime"]
    # }
  }

  # Where each alloc sees the volume on this host: a new or empty directory (volctl
  # does not bind over files, which it would hide). With count > 1, put {index}
  # (0, 1, ...) or {alloc} (web[0], ...) in the path so allocs do not collide.
  volume_mount {
    volume      = "data"
    destination = "/srv/web/data"
    read_only   = false

    # private (the default), host-to-task, or bidirectional (read-write volumes only).
    propagation_mode = "private"
  }
}
