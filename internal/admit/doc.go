// Package admit keeps the connections that have not authenticated yet cheap and fair, for
// the listeners of the job channel and of the image stream: a stranger on the cluster
// network may connect to them, and must not keep the job's own ranks out.
//
// A listener accepts continuously and puts every new connection in a Gate, which holds at
// most Max of them. A connection that has said something and is not through its handshake
// within Deadline is closed (a slow peer). A silent one costs a descriptor and a parked
// goroutine, and is kept while there is room: closing it would only bring it back at once
// from a stranger who holds it, in the kernel's accept queue in front of the real peers.
// When a new connection finds the gate full, one that waits makes room, from the address
// with the most waiting: one silent for more than FirstByte first, then a slow one, then
// a young silent one, the oldest first. So strangers from one address push out each other
// only (and, on a shared address such as a test's loopback, the oldest silent ones: a
// real peer answers within a round trip, and redials when it is dropped). Nothing is
// refused for its address alone: many workers may share one (NAT, loopback).
package admit
