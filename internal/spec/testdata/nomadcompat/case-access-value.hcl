id = "v1"
name = "v1"
type = "csi"
plugin_id = "p"
external_id = "ext1"
capability {
  access_mode = "Single-Node-Writer"
  attachment_mode = "file-system"
}
