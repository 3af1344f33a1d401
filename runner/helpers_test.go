package runner

import "github.com/benchctl/benchctl/internal/testutil"

// lookupOf is testutil.LookupOf under the name distribute_test.go uses: it goes when that
// file moves to distribution/ (the image phase's own package).
var lookupOf = testutil.LookupOf
