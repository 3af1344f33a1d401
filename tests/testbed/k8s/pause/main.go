// Command pause is the testbed cluster's pod sandbox: it sleeps, reaps orphans, and exits
// on SIGINT or SIGTERM (what the kubelet's pause image does), built here so that nothing is
// pulled from a registry.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	c := make(chan os.Signal, 8)
	signal.Notify(c, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range c {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			if pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil); pid <= 0 || err != nil {
				break
			}
		}
	}
}
