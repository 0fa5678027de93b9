package postgres

import (
	"strings"

	"github.com/jackc/pgx/v5"
)

// queries holds every statement of one store with its table names
// resolved: schema-qualified under WithSchema, bare (the connection's
// search_path) otherwise. Qualifying the names, rather than setting
// search_path on the connections, keeps a caller's pool untouched.
type queries struct {
	schema string

	insert, byKey, claim, confirm, depth, signal string
	createSession, session, endSession           string

	lockNode, parentNode, insertNode, recordNode, notifiedNode string
	nodesByRoot, nodesBySession                                string
}

func newQueries(schema string) queries {
	name := func(table string) string {
		if schema == "" {
			return table
		}
		return pgx.Identifier{schema, table}.Sanitize()
	}
	r := strings.NewReplacer(
		"{signals}", name("signals"),
		"{sessions}", name("signal_sessions"),
		"{executions}", name("executions"),
		"{signals_delivery}", name("signals_delivery"),
	)
	return queries{
		schema: r.Replace(schemaSQL),

		insert:        r.Replace(insertSQL),
		byKey:         r.Replace(byKeySQL),
		claim:         r.Replace(claimSQL),
		confirm:       r.Replace(confirmSQL),
		depth:         r.Replace(depthSQL),
		signal:        r.Replace(signalSQL),
		createSession: r.Replace(createSessionSQL),
		session:       r.Replace(sessionSQL),
		endSession:    r.Replace(endSessionSQL),

		lockNode:       r.Replace(lockNodeSQL),
		parentNode:     r.Replace(parentNodeSQL),
		insertNode:     r.Replace(insertNodeSQL),
		recordNode:     r.Replace(recordNodeSQL),
		notifiedNode:   r.Replace(notifiedNodeSQL),
		nodesByRoot:    r.Replace(nodesByRootSQL),
		nodesBySession: r.Replace(nodesBySessionSQL),
	}
}
