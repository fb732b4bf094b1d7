package sqlserver

import (
	"context"
	"database/sql"
	"log/slog"
)

// Options bundle what Open needs.
type Options struct {
	Server Config
	Engine EngineConfig
	// Init runs once on the engine before the server accepts connections:
	// DHSI registers its UDFs and views here.
	Init []func(ctx context.Context, db *sql.DB) error
	Log  *slog.Logger
}

// Open opens the engine, runs the Init hooks and binds the listener.
func Open(ctx context.Context, opts Options) (*Server, *Engine, error) {
	engine, err := OpenEngine(ctx, opts.Engine, shimSQL())
	if err != nil {
		return nil, nil, err
	}
	for _, fn := range opts.Init {
		if err := fn(ctx, engine.DB()); err != nil {
			engine.Close()
			return nil, nil, err
		}
	}
	if err := engine.LockDown(ctx); err != nil {
		engine.Close()
		return nil, nil, err
	}
	srv, err := New(opts.Server, engine, opts.Log)
	if err != nil {
		engine.Close()
		return nil, nil, err
	}
	if err := srv.Listen(); err != nil {
		engine.Close()
		return nil, nil, err
	}
	return srv, engine, nil
}
