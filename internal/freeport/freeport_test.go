package freeport

import (
	"net"
	"strconv"
	"testing"
)

func TestRange(t *testing.T) {
	ports, err := Range(8)
	if err != nil || len(ports) != 8 {
		t.Fatalf("%v %v", ports, err)
	}
	for i, p := range ports {
		if i > 0 && p != ports[i-1]+1 {
			t.Fatalf("not consecutive: %v", ports)
		}
		ln, err := net.Listen("tcp", net.JoinHostPort("", strconv.Itoa(p)))
		if err != nil {
			t.Errorf("port %d: %v", p, err)
			continue
		}
		ln.Close()
	}
}
