id = "v1"
name = "v1"
type = "csi"
plugin_id = "p"
external_id = "ext1"
mount_options {
  fs_type = "ext4"
}
mount_options {
  fs_type = "xfs"
}
capability {
  access_mode = "single-node-writer"
  attachment_mode = "file-system"
}
