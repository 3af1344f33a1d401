//go:build !unix

package results

import "os"

func readInto(path string, buf *[]byte, limit int64) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return readAllInto(f, buf, path, limit)
}
