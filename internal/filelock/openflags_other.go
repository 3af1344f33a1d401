//go:build !unix

package filelock

const noFollow = 0
