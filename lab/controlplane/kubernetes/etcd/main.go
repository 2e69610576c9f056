// etcd's server binary from its Go module: the same entry point as the upstream etcd command.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
