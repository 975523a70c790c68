package flight

// SetBeforeCall installs a hook run at the start of DoAction,
// GetFlightInfo and DoGet (e.g. to force a panic).
func SetBeforeCall(s *Service, f func(method string)) { s.beforeCall = f }
