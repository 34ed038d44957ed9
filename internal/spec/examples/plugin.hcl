# A CSI plugin volctl talks to over a unix socket.
#   volctl validate plugin.hcl
#   volctl plugin register plugin.hcl

plugin "hostpath" {
  # monolith: one process serves both the controller and the node service (most plugins).
  # controller, node: one half of a plugin split in two processes (see the end of the file).
  type = "monolith"

  # The unix socket the plugin serves on: an absolute path of at most 107 bytes.
  # A monolith with separate sockets gives controller_socket and node_socket instead.
  socket = "/run/volctl/hostpath.sock"

  # Optional: how long volctl waits for create, publish, stage and their reverses.
  timeout = "2m"

  # Optional: volctl starts the plugin itself, restarts it when it dies, and stops it
  # last. It sets CSI_ENDPOINT=unix://<socket> in the plugin's environment. Arguments
  # are passed exactly as written (there is no interpolation), so spell out the
  # socket path wherever a flag needs it.
  exec {
    command = "/usr/local/bin/volctl"
    args = [
      "plugin", "serve", "hostpath",
      "--socket", "/run/volctl/hostpath.sock",
      "--root", "/var/lib/volctl-hostpath",
      "--node-id", "node1",
    ]

    # Optional: environment for the plugin. volctl never prints the values.
    env {
      # AWS_REGION = "us-east-1"
    }
  }
}

# A plugin split in two processes, as Nomad runs it (a controller plugin job and a node plugin
# job with one plugin ID), is two plugin blocks with the same ID: volctl joins them into one
# plugin with a controller socket and a node socket, which volumes name in plugin_id. The
# halves may also be in two files, or registered one after the other. A half takes no exec
# block: run both processes outside volctl, or declare one process serving both sockets as
# type "monolith" with controller_socket and node_socket. Until the controller half is
# registered too, volumes of a driver with a controller service can be neither registered nor
# claimed (as in Nomad: no controller, nothing to attach or validate them).
#
# plugin "ebs" {
#   type   = "controller"
#   socket = "/run/csi/ebs-controller.sock"
# }
#
# plugin "ebs" {
#   type   = "node"
#   socket = "/run/csi/ebs-node.sock"
# }
