package sandbox

import "errors"

// denialIn returns the *Denial err holds (found with errors.As), or nil
// when err is nil or holds none.
func denialIn(err error) *Denial {
	var d *Denial
	if errors.As(err, &d) {
		return d
	}
	return nil
}

// denialCode returns the Code of the *Denial err holds, or "" when err is
// nil or holds none (so a refusal of another kind never matches a code).
func denialCode(err error) DenialCode {
	if d := denialIn(err); d != nil {
		return d.Code
	}
	return ""
}
