package nodestatus

import (
	"github.com/benchctl/benchctl/jobdir/jobdirtest"
)

// testNodeFolder is jobdirtest.NodeFolder.
var testNodeFolder = jobdirtest.NodeFolder
