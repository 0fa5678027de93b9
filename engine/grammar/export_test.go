package grammar

// Piece exposes a vocabulary entry's bytes to the tests.
func (v *Vocabulary) Piece(id int32) []byte { return v.pieces[id] }

// ValidPrefix exposes validPrefix to the tests.
var ValidPrefix = validPrefix
