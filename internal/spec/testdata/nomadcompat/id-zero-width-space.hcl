id = "d​b"
name = "db"
type = "csi"
plugin_id = "p"
external_id = "ext1"
capability {
  access_mode = "single-node-writer"
  attachment_mode = "file-system"
}
