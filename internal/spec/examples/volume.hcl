# A CSI volume spec, in Nomad's format: the same file works with "nomad volume create".
#   volctl validate --for create volume.hcl
#   volctl volume create volume.hcl

# volctl's key for the volume. It becomes a directory name: no "/", no leading "-".
id        = "data"
namespace = "default"

# The name the plugin gives the volume it creates; it also makes creation idempotent.
name = "data"
type = "csi"

# The plugin that serves the volume, as registered with "volctl plugin register".
# "hostpath" is volctl's own directory-backed plugin ("volctl plugin serve hostpath").
plugin_id = "hostpath"

# To register a volume that already exists instead, give the storage provider's ID
# for it (and drop snapshot_id, clone_id and topology_request.preferred):
# external_id = "vol-0123456789"

# Optional, create only: start from a snapshot, or clone a volume (not both).
# snapshot_id = "snap-12345"
# clone_id    = "vol-abcdef"

# Optional: the capacity to ask for. KiB, MiB, GiB, TiB are powers of 1024;
# KB, MB, GB, TB powers of 1000; a bare number is bytes.
capacity_min = "1GiB"
capacity_max = "10GiB"

# At least one: how the volume may be used.
#   access_mode:     single-node-reader-only, single-node-writer, multi-node-reader-only,
#                    multi-node-single-writer, multi-node-multi-writer
#   attachment_mode: file-system, block-device
capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}

capability {
  access_mode     = "single-node-reader-only"
  attachment_mode = "file-system"
}

# Optional: how a file-system volume is mounted. Mount flags may hold credentials,
# so volctl never prints them.
# mount_options {
#   fs_type     = "ext4"
#   mount_flags = ["noatime"]
# }

# Optional: where the volume must (required) or should (preferred, create only) be
# accessible. Segment keys and values are the plugin's.
# topology_request {
#   required {
#     topology { segments { rack = "R1" } }
#   }
# }

# Optional: secrets the plugin needs. volctl never prints their values.
# secrets {
#   password = "xyzzy"
# }

# Optional: parameters for the plugin, passed on create.
parameters {
  # skuname = "Premium_LRS"
}

# Register only: the volume's context (on create, the plugin returns it).
# context {
#   endpoint = "http://192.168.1.101:9425"
# }
