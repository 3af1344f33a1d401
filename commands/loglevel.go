package commands

import (
	"context"
	"log/slog"
)

// infoShown reports whether lines for information (below warnings) are shown on stderr:
// not with -q/--quiet or --log-level warn or error. What a command says on stderr that is
// not a log record (jobs' "no jobs in ...", init's "wrote ...") asks it first.
func infoShown() bool { return slog.Default().Enabled(context.Background(), slog.LevelInfo) }
