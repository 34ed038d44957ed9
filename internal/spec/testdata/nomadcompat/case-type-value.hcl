id = "v1"
name = "v1"
type = "CSI"
plugin_id = "p"
external_id = "ext1"
capability {
  access_mode = "single-node-writer"
  attachment_mode = "file-system"
}
