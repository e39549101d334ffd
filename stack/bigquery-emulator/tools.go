//go:build tools

// Package tools pins the BigQuery emulator the local stack builds (go build, through the Go module proxy).
package tools

import _ "github.com/goccy/bigquery-emulator/cmd/bigquery-emulator"
