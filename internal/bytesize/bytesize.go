package bytesize

import "fmt"

// Human formats n bytes in binary units, one decimal above a KiB:
// "512 B", "1.5 KiB", "64.0 MiB", up to TiB ("2048.0 TiB" beyond).
// Fractions (rates) are formatted the same way; a negative count stays
// in bytes.
func Human[T int64 | float64](n T) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	v, i := float64(n), 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%.0f %s", v, units[i])
	}
	return fmt.Sprintf("%.1f %s", v, units[i])
}
