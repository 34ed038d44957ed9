id = "v1"
name = "v1"
type = "csi"
plugin_id = "p"
external_id = "ext1"
namespace = "team_a"
capability {
  access_mode = "single-node-writer"
  attachment_mode = "file-system"
}
