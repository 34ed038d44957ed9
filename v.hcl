id = "x1"
name = "x1"
type = "csi"
plugin_id = "hp"
capacity_min = "10MiB"
capability {
  access_mode = "single-node-writer"
  attachment_mode = "file-system"
}
