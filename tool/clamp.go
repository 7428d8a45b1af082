package tool

import "fmt"

// ClampNote is the one wording of a clamp every tool announces when it
// lowers a value the model asked for ("limit 5000 clamped to 2000"), so a
// model reads every clamp the same way. Callers add their own "note: "
// prefix or line break where their answer needs one.
func ClampNote(property string, asked, granted int64) string {
	return fmt.Sprintf("%s %d clamped to %d", property, asked, granted)
}
