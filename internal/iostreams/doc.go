// Package iostreams holds the IO streams a command writes to, decided in one place:
// stdout for results, stderr for logs and progress, whether each is a terminal (asked of the
// stream itself, or fixed by a test) and whether output may be coloured or redrawn.
package iostreams
