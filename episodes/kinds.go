package episodes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/weftdata/weft/errdefs"
	"github.com/weftdata/weft/internal/cache"
	"github.com/weftdata/weft/internal/membudget"
	"github.com/weftdata/weft/mix"
	"github.com/weftdata/weft/tables"
	"github.com/weftdata/weft/versions"
	"github.com/weftdata/weft/video"
)

// The kinds' names in a recipe's windows.
const (
	KindRows  = "rows"
	KindVideo = "video"
)

// MediaSource opens media objects by project and sha256 (tables.Store
// satisfies it). The reader must allow concurrent ranged reads; if it is
// an io.Closer, it is closed once its reads are done. A missing object is
// an error that wraps errdefs.ErrNotFound.
type MediaSource interface {
	OpenMedia(ctx context.Context, p versions.ProjectName, sha string) (io.ReaderAt, int64, error)
}

// Options configure Kinds.
type Options struct {
	// Media opens media objects; nil means the engine's tables store when
	// it is a MediaSource (video windows fail with ErrNoMediaSource
	// otherwise).
	Media MediaSource
	// MediaIndexBytes bounds the cached media indexes (video.Index, about
	// 100 bytes per frame).
	MediaIndexBytes int64
	// EpisodeIndexBytes bounds the cached episode indexes.
	EpisodeIndexBytes int64
	// CoalesceBytes: ranged reads of one media object in one step whose
	// gap is at most this many bytes are merged into one read.
	CoalesceBytes int64
	// MaxStepBytes bounds the media bytes one rank's step of a video
	// window reads (its access units, as coalesced reads): a step over it
	// fails with ErrTooLarge before reading anything. flightd sets it to
	// --max-step-size.
	MaxStepBytes int64
	// Budget, if set, is the process memory budget: a step leases twice
	// its media bytes (the reads, then the Arrow arrays built from them)
	// before it reads, and gives them back when it is released; the
	// cached media and episode indexes lease theirs.
	Budget *membudget.Budget
	// Logger; nil discards.
	Logger *slog.Logger
}

// DefaultOptions: 256 MiB of media indexes, 64 MiB of episode indexes,
// reads merged across gaps of up to 64 KiB, 256 MiB of media per step.
func DefaultOptions() Options {
	return Options{MediaIndexBytes: 256 << 20, EpisodeIndexBytes: 64 << 20, CoalesceBytes: 64 << 10, MaxStepBytes: 256 << 20}
}

// Validate reports an unusable option.
func (o Options) Validate() error {
	if o.MediaIndexBytes < 0 || o.EpisodeIndexBytes < 0 || o.CoalesceBytes < 0 || o.MaxStepBytes < 1 {
		return fmt.Errorf("%w: episodes options: MediaIndexBytes, EpisodeIndexBytes and CoalesceBytes must be 0 or more, MaxStepBytes positive", errdefs.ErrInvalidArgument)
	}
	return nil
}

// Kinds holds the "rows" and "video" kinds and the caches they share with
// the append check. Safe for concurrent use.
type Kinds struct {
	opts     Options
	log      *slog.Logger
	episodes *cache.Cache[episodeKey, *EpisodeIndex]
	media    *cache.Cache[mediaKey, *video.Index]
}

// mediaKey names a media object.
type mediaKey struct {
	project versions.ProjectName
	sha     string
}

// New makes the kinds.
func New(opts Options) (*Kinds, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	k := &Kinds{
		opts:     opts,
		log:      log,
		episodes: cache.New[episodeKey, *EpisodeIndex](opts.EpisodeIndexBytes, nil),
		media:    cache.New[mediaKey, *video.Index](opts.MediaIndexBytes, nil),
	}
	// The caches' entries lease their bytes too, and give them back under
	// pressure.
	k.episodes.UseBudget(opts.Budget)
	k.media.UseBudget(opts.Budget)
	return k, nil
}

// Map is the kinds by name, for mix.Options.Kinds.
func (k *Kinds) Map() map[string]mix.Kind {
	return map[string]mix.Kind{KindRows: &rowsKind{k: k}, KindVideo: &videoKind{k: k}}
}

// Close drops the caches.
func (k *Kinds) Close() {
	k.episodes.Purge()
	k.media.Purge()
}

// episodeIndex returns the cached episode index of v by its episode
// column.
func (k *Kinds) episodeIndex(ctx context.Context, r *tables.Reader, v *tables.Version) (*EpisodeIndex, error) {
	col, err := episodeColumn(v.Schema)
	if err != nil {
		return nil, err
	}
	if col == "" {
		return nil, fmt.Errorf("%w: %s/%s has none: name the episode column in the schema metadata weft.episode, or call it episode_index", ErrNoEpisodes, v.Project, v.Table)
	}
	h, err := k.episodes.Get(ctx, episodeKey{manifest: v.Manifest.ID, column: col}, func(lctx context.Context) (*EpisodeIndex, int64, error) {
		x, err := buildEpisodeIndex(lctx, r, v, col)
		if err != nil {
			return nil, 0, err
		}
		return x, x.bytes(), nil
	})
	if err != nil {
		return nil, err
	}
	defer h.Release() // immutable; the GC keeps it while in use
	return h.Value(), nil
}

// source is the media source of the kinds, or of env.
func (k *Kinds) source(env mix.Env) (MediaSource, error) {
	if k.opts.Media != nil {
		return k.opts.Media, nil
	}
	if s, ok := any(env.Tables).(MediaSource); ok && env.Tables != nil {
		return s, nil
	}
	return nil, fmt.Errorf("%w: this server cannot open media objects, so it serves no video windows", ErrNoMediaSource)
}

// mediaIndex returns the cached index of a media object. Errors name the
// media object: NotFound when it is not in the bucket, FailedPrecondition
// (ErrMediaUnreadable) when it is not an indexable MP4.
func (k *Kinds) mediaIndex(ctx context.Context, src MediaSource, p versions.ProjectName, sha string) (*video.Index, error) {
	h, err := k.media.Get(ctx, mediaKey{project: p, sha: sha}, func(lctx context.Context) (*video.Index, int64, error) {
		r, size, err := src.OpenMedia(lctx, p, sha)
		if err != nil {
			if errors.Is(err, errdefs.ErrNotFound) {
				return nil, 0, fmt.Errorf("%w: %s/media/%s.mp4 is not in the bucket: upload it (DoPut media) or fix the row: %w", ErrMediaNotFound, p, sha, err)
			}
			return nil, 0, fmt.Errorf("open media %s: %w", shortSHA(sha), err)
		}
		defer closeMedia(r)
		x, err := video.Read(lctx, r, size)
		if err != nil {
			if errors.Is(err, errdefs.ErrInvalidArgument) {
				// Bytes in the bucket, not the caller's input: the chain
				// keeps the cause's text, not its InvalidArgument kind.
				return nil, 0, fmt.Errorf("%w: media %s in the bucket: %s", ErrMediaUnreadable, shortSHA(sha), err.Error())
			}
			return nil, 0, fmt.Errorf("index media %s: %w", shortSHA(sha), err)
		}
		return x, indexBytes(x), nil
	})
	if err != nil {
		return nil, err
	}
	defer h.Release() // immutable; the GC keeps it while in use
	return h.Value(), nil
}

// indexBytes estimates an index's memory.
func indexBytes(x *video.Index) int64 {
	n := int64(256 + len(x.Config.Box))
	for _, ps := range x.Config.ParameterSets {
		n += int64(len(ps))
	}
	return n + int64(x.Len())*(56+16)
}

// closeMedia closes a MediaSource's reader when it is an io.Closer.
func closeMedia(r io.ReaderAt) {
	if c, ok := r.(io.Closer); ok {
		_ = c.Close()
	}
}
