id = "v1"
name = <<EOF
l1
  l2
EOF
type = "csi"
plugin_id = "p"
external_id = "ext1"
"parameters" {
  x = <<-EOF
    l1
    l2
    EOF
}
capability {
  access_mode = "single-node-writer"
  attachment_mode = "file-system"
}
