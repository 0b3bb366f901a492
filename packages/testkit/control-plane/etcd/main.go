// etcd 3.6 for the control plane that the tests run: etcd's own main, built static by
// build.sh (Debian's etcd-server is 3.4, older than the API server supports).
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
