package agent

import (
	"errors"
	"io/fs"
)

// newFileMode is the mode of files the tools create: owner-only, as every
// file of the workspace.
const newFileMode fs.FileMode = 0o600

// errChanged: the file at a checked path is no longer the one checked.
var errChanged = errors.New("file changed during the operation")
