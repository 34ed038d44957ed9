id = "v1"
name = "v1"
type = "csi"
plugin_id = "p"
capacity_min = "1\u0030GiB"
capability {
  access_mode = "single-node-writer"
  attachment_mode = "file-system"
}
