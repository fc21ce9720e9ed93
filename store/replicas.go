package store

import (
	"context"
	"fmt"
	"time"
)

// Replica leases tell the replicas of a service which of them are alive:
// each renews a row under its own tag while it runs, and one whose row
// expired (it crashed, or stalled for longer than the lease) or is gone
// (it stopped) is gone. A replica is declared gone on that evidence only,
// never because it is slow to answer through the Bus. Times are the
// database's on PostgreSQL, so the replicas' clocks do not matter.

// replicaLeasesMigration is the replicas' liveness leases' table; on
// PostgreSQL it is unlogged, as conversation_locks: a lease is worth
// nothing after a crash of the database.
func replicaLeasesMigration(postgres bool) []string {
	if postgres {
		return []string{`CREATE UNLOGGED TABLE replica_leases (
			tag TEXT PRIMARY KEY,
			expires_at TIMESTAMPTZ NOT NULL)`}
	}
	return []string{`CREATE TABLE replica_leases (
		tag TEXT PRIMARY KEY,
		expires_at INTEGER NOT NULL)`}
}

// The statements on replica leases, by dialect; expired leases are kept
// an hour (a replica's absence is worth knowing), then dropped by the next
// renewal.
const (
	renewReplicaPG = `INSERT INTO replica_leases (tag, expires_at) VALUES ($1, clock_timestamp() + make_interval(secs => $2))
		ON CONFLICT (tag) DO UPDATE SET expires_at = excluded.expires_at`
	pruneReplicasPG  = `DELETE FROM replica_leases WHERE expires_at < clock_timestamp() - interval '1 hour'`
	liveReplicasPG   = `SELECT tag FROM replica_leases WHERE expires_at > clock_timestamp()`
	renewReplicaLite = `INSERT INTO replica_leases (tag, expires_at) VALUES (?, ?)
		ON CONFLICT (tag) DO UPDATE SET expires_at = excluded.expires_at`
	pruneReplicasLite = `DELETE FROM replica_leases WHERE expires_at < ?`
	liveReplicasLite  = `SELECT tag FROM replica_leases WHERE expires_at > ?`
	dropReplicaSQL    = `DELETE FROM replica_leases WHERE tag = ?`
)

// RenewReplica keeps the liveness lease of replica tag live for ttl from
// now, taking it if it has none.
func (s *Store) RenewReplica(ctx context.Context, tag string, ttl time.Duration) (err error) {
	ctx, end := s.call(ctx)
	defer end(&err)
	if err := s.check(tag); err != nil {
		return err
	}
	if s.dialect == dialectPostgres {
		if _, err := s.db.ExecContext(ctx, pruneReplicasPG); err != nil {
			return fmt.Errorf("drop old replica leases: %w", err)
		}
		if _, err := s.db.ExecContext(ctx, renewReplicaPG, tag, ttl.Seconds()); err != nil {
			return fmt.Errorf("renew the lease of replica %q: %w", tag, err)
		}
		return nil
	}
	now := s.now()
	if _, err := s.db.ExecContext(ctx, pruneReplicasLite, now.Add(-time.Hour).UnixMicro()); err != nil {
		return fmt.Errorf("drop old replica leases: %w", err)
	}
	if _, err := s.db.ExecContext(ctx, renewReplicaLite, tag, now.Add(ttl).UnixMicro()); err != nil {
		return fmt.Errorf("renew the lease of replica %q: %w", tag, err)
	}
	return nil
}

// LiveReplicas returns the tags of the replicas whose lease is live, in no
// particular order.
func (s *Store) LiveReplicas(ctx context.Context) (_ []string, err error) {
	ctx, end := s.call(ctx)
	defer end(&err)
	if err := s.check(); err != nil {
		return nil, err
	}
	query, args := liveReplicasPG, []any(nil)
	if s.dialect != dialectPostgres {
		query, args = liveReplicasLite, []any{s.now().UnixMicro()}
	}
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("read the replicas' leases: %w", err)
	}
	defer func() { _ = rows.Close() }() // read to the end below; its error is rows.Err's
	var tags []string
	for rows.Next() {
		var tag string
		if err := rows.Scan(&tag); err != nil {
			return nil, fmt.Errorf("read the replicas' leases: %w", err)
		}
		tags = append(tags, tag)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the replicas' leases: %w", err)
	}
	return tags, nil
}

// DropReplica ends the liveness lease of replica tag, which stops: the
// others know at once that it is gone. A tag without a lease is no error.
func (s *Store) DropReplica(ctx context.Context, tag string) (err error) {
	ctx, end := s.call(ctx)
	defer end(&err)
	if err := s.check(tag); err != nil {
		return err
	}
	if _, err := s.db.ExecContext(ctx, s.q(dropReplicaSQL), tag); err != nil {
		return fmt.Errorf("drop the lease of replica %q: %w", tag, err)
	}
	return nil
}
