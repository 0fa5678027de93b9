package grammar

// formats maps the supported "format" values to the ECMA-262 patterns that
// enforce them (anchored). Each is a subset of what the format's RFC
// allows, never a superset: where the RFC's rule is not regular or is
// loose (leap seconds, quoted e-mail local parts, IPv6 zones) the pattern
// leaves it out, so generated values always validate. uri and
// uri-reference are RFC 3986 in ASCII only (no IRIs), byte is canonical
// RFC 4648 base64 (OpenAPI's "byte").
var formats = map[string]string{
	"date":          `` + date,
	"time":          `` + timeOfDay,
	"date-time":     date + `[Tt]` + timeOfDay,
	"duration":      `P(?:[0-9]+W|(?:[0-9]+Y(?:[0-9]+M)?(?:[0-9]+D)?|[0-9]+M(?:[0-9]+D)?|[0-9]+D)(?:T` + durTime + `)?|T` + durTime + `)`,
	"email":         `[A-Za-z0-9!#$%&'*+/=?^_{|}~-]{1,32}(?:\.[A-Za-z0-9!#$%&'*+/=?^_{|}~-]{1,30}){0,1}@` + emailHost,
	"hostname":      hostname,
	"ipv4":          ipv4,
	"ipv6":          ipv6,
	"uuid":          `[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}`,
	"uri":           uri,
	"uri-reference": `(?:` + uri + `|` + relativeRef + `)`,
	"json-pointer":  jsonPointer,
	// relative-json-pointer: a non-negative integer, then "#" or a JSON
	// pointer (without the later drafts' index adjustment, +1 / -1).
	"relative-json-pointer": `(?:0|[1-9][0-9]*)(?:#|` + jsonPointer + `)`,
	"byte":                  `(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/][AQgw]==|[A-Za-z0-9+/]{2}[AEIMQUYcgkosw048]=)?`,
}

const (
	// date: full-date of RFC 3339 with the real number of days per month
	// and leap years.
	date = `(?:[0-9]{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)|02-(?:0[1-9]|1[0-9]|2[0-8]))` +
		`|(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:[02468][048]|[13579][26])00)-02-29)`
	// timeOfDay: full-time of RFC 3339 without leap seconds.
	timeOfDay = `(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\.[0-9]{1,9})?(?:[Zz]|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])`
	// jsonPointer: RFC 6901, "~" only as ~0 or ~1.
	jsonPointer = `(?:/(?:[^/~]|~[01])*)*`
	durTime     = `(?:[0-9]+H(?:[0-9]+M)?(?:[0-9]+S)?|[0-9]+M(?:[0-9]+S)?|[0-9]+S)`
	label       = `[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?`
	// hostname: at most four labels, so the 253-character limit holds.
	hostname = `(?:` + label + `\.){0,2}[A-Za-z](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?`
	// emailHost keeps a whole address under 255 characters.
	emailHost = `(?:` + label + `\.){0,1}[A-Za-z](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?`
	octet     = `(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])`
	ipv4      = octet + `\.` + octet + `\.` + octet + `\.` + octet
	h16       = `[0-9a-fA-F]{1,4}`
	ipv6      = `(?:(?:` + h16 + `:){7}` + h16 +
		`|(?:` + h16 + `:){1,7}:` +
		`|(?:` + h16 + `:){1,6}:` + h16 +
		`|(?:` + h16 + `:){1,5}(?::` + h16 + `){1,2}` +
		`|(?:` + h16 + `:){1,4}(?::` + h16 + `){1,3}` +
		`|(?:` + h16 + `:){1,3}(?::` + h16 + `){1,4}` +
		`|(?:` + h16 + `:){1,2}(?::` + h16 + `){1,5}` +
		`|` + h16 + `:(?::` + h16 + `){1,6}` +
		`|:(?:(?::` + h16 + `){1,7}|:))`

	// RFC 3986, ASCII only. A percent sign only starts %HH. The host is an
	// IPv6 literal (as ipv6 above, no IPvFuture) or a reg-name without
	// percent-encoding (which may only encode non-ASCII bytes there); an
	// IPv4 address is a reg-name.
	pct      = `%[0-9A-Fa-f]{2}`
	pchar    = `(?:[A-Za-z0-9._~!$&'()*+,;=:@-]|` + pct + `)`
	userinfo = `(?:[A-Za-z0-9._~!$&'()*+,;=:-]|` + pct + `)*`
	// authority ends before the first "/", "?" or "#"; port is *DIGIT.
	authority    = `(?:` + userinfo + `@)?(?:\[` + ipv6 + `\]|[A-Za-z0-9._~!$&'()*+,;=-]*)(?::[0-9]*)?`
	pathAbempty  = `(?:/` + pchar + `*)*`
	pathAbsolute = `/(?:` + pchar + `+` + pathAbempty + `)?`
	// queryFragment: ["?" query] ["#" fragment].
	queryFragment = `(?:\?(?:` + pchar + `|[/?])*)?(?:#(?:` + pchar + `|[/?])*)?`
	// uri: scheme ":" hier-part ["?" query] ["#" fragment].
	uri = `[A-Za-z][A-Za-z0-9+.-]*:(?://` + authority + pathAbempty + `|` + pathAbsolute + `|` + pchar + `+` + pathAbempty + `)?` + queryFragment
	// relativeRef: relative-part ["?" query] ["#" fragment]; the first
	// segment of a relative path has no colon.
	relativeRef = `(?://` + authority + pathAbempty + `|` + pathAbsolute + `|(?:[A-Za-z0-9._~!$&'()*+,;=@-]|` + pct + `)+` + pathAbempty + `)?` + queryFragment
)
