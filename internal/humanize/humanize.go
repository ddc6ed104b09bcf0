// Package humanize formats quantities for people: byte counts in binary
// units, as the CLI's status and the report's output tables show them.
package humanize

import "fmt"

// Bytes formats a byte count in binary units: "512 B", "1.5 KiB", "3.0 GiB".
func Bytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
