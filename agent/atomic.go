package agent

import (
	"errors"
	"io/fs"
)

// newFileMode is the mode of files the tools create.
const newFileMode fs.FileMode = 0o644

// errChanged: the file at a checked path is no longer the one checked.
var errChanged = errors.New("file changed during the operation")
