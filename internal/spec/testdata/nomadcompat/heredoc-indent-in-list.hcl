id = "v1"
name = "v1"
type = "csi"
plugin_id = "p"
external_id = "ext1"
mount_options {
  mount_flags = [<<-EOF
    ro
      noatime
  EOF
  , <<-EOT
  x
    EOT
  ]
}
capability {
  access_mode = "single-node-writer"
  attachment_mode = "file-system"
}
