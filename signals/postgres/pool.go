package postgres

import (
	"context"
	"sync"

	"github.com/jackc/pgx/v5"
)

// pool is a small fixed-size pool of pgx connections.
type pool struct {
	cfg  *pgx.ConnConfig
	sem  chan struct{}
	mu   sync.Mutex
	idle []*pgx.Conn
}

func newPool(cfg *pgx.ConnConfig, size int) *pool {
	return &pool{cfg: cfg, sem: make(chan struct{}, size)}
}

func (p *pool) acquire(ctx context.Context) (*pgx.Conn, error) {
	select {
	case p.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	p.mu.Lock()
	for len(p.idle) > 0 {
		c := p.idle[len(p.idle)-1]
		p.idle = p.idle[:len(p.idle)-1]
		if !c.IsClosed() {
			p.mu.Unlock()
			return c, nil
		}
	}
	p.mu.Unlock()
	c, err := pgx.ConnectConfig(ctx, p.cfg)
	if err != nil {
		<-p.sem
		return nil, err
	}
	return c, nil
}

// release returns c to the pool; a connection left in a bad state (an
// error mid-transaction, a closed socket) is closed instead.
func (p *pool) release(c *pgx.Conn, healthy bool) {
	defer func() { <-p.sem }()
	if !healthy || c.IsClosed() || c.PgConn().TxStatus() != 'I' {
		_ = c.Close(context.Background())
		return
	}
	p.mu.Lock()
	p.idle = append(p.idle, c)
	p.mu.Unlock()
}

// with runs fn on a pooled connection.
func (p *pool) with(ctx context.Context, fn func(c *pgx.Conn) error) error {
	c, err := p.acquire(ctx)
	if err != nil {
		return err
	}
	err = fn(c)
	p.release(c, true) // release closes a connection left broken or mid-transaction
	return err
}

// tx runs fn in a transaction on a pooled connection.
func (p *pool) tx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return p.with(ctx, func(c *pgx.Conn) error {
		return pgx.BeginFunc(ctx, c, fn)
	})
}

func (p *pool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.idle {
		_ = c.Close(context.Background())
	}
	p.idle = nil
}
