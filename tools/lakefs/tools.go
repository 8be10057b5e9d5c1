//go:build tools

// Blank imports keep the pinned packages in go.sum for `go build`.
package tools

import (
	_ "github.com/treeverse/lakefs/cmd/lakectl"
)
