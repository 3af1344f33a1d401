// Package jsonlimit bounds what decoding a JSON file from the shared directory can cost
// before encoding/json is given it. A file within its size cap can still hold millions of
// tiny values (16 MiB of `{},` is 5.6 million objects, which encoding/json turns into
// gigabytes of structs); a co-writer of the shared directory could plant one to exhaust
// the memory of whoever reads it. Check counts the marks that open a value, in one pass
// over the bytes and without allocating, and refuses a file with too many or nested too
// deep.
package jsonlimit
