//! Which segments the writer merges: small ones only, of similar size, in groups whose
//! files add up to at most [`MERGE_INPUT_MAX`]. A merge maps and reads every input file, and those pages count
//! in the process's resident memory, so the input size of one merge (merges run one at a
//! time) bounds what merging adds to it. Large segments stay as they are unless most of
//! their documents were replaced.

use std::fs;
use std::path::PathBuf;

use tantivy::index::{SegmentComponent, SegmentMeta};
use tantivy::indexer::{MergeCandidate, MergePolicy};

/// Most bytes of segment files one merge reads.
pub const MERGE_INPUT_MAX: u64 = 96 << 20;
/// Segments larger than this are not merged with others.
const SMALL_SEGMENT: u64 = MERGE_INPUT_MAX / 3;
/// Fewest segments of one level worth one merge.
const MIN_GROUP: usize = 4;
/// Segments up to this size are all of level 0.
const LEVEL_FLOOR: u64 = 1 << 20;
/// Size ratio between two levels.
const LEVEL_FACTOR: u64 = 4;
/// A segment with more than this share of its documents deleted is rewritten (alone when
/// it is large), so replaced sessions do not keep their old text on disk for ever.
const DELETED_SHARE: f64 = 0.5;
/// Size assumed per document when the index has no directory (in memory).
const IN_MEMORY_DOC_BYTES: u64 = 32 << 10;

const COMPONENTS: [SegmentComponent; 6] = [
    SegmentComponent::Postings,
    SegmentComponent::Positions,
    SegmentComponent::Terms,
    SegmentComponent::Store,
    SegmentComponent::FastFields,
    SegmentComponent::FieldNorms,
];

/// The merge policy of the session index.
#[derive(Debug, Clone)]
pub struct BoundedMerges {
    /// The index directory, to size segments by their files.
    dir: Option<PathBuf>,
}

impl BoundedMerges {
    pub fn new(dir: Option<PathBuf>) -> Self {
        BoundedMerges { dir }
    }

    fn size(&self, meta: &SegmentMeta) -> u64 {
        let Some(dir) = &self.dir else {
            return u64::from(meta.max_doc()).saturating_mul(IN_MEMORY_DOC_BYTES);
        };
        COMPONENTS
            .iter()
            .filter_map(|c| fs::metadata(dir.join(meta.relative_path(c.clone()))).ok())
            .map(|m| m.len())
            .sum()
    }
}

/// The size level of a segment: 0 up to [`LEVEL_FLOOR`], then one level per
/// [`LEVEL_FACTOR`]× more bytes. Only segments of one level merge together, so a merged
/// segment is not merged again until enough others reach its size (each byte is rewritten
/// about once per level, not once per merge).
fn level(size: u64) -> u32 {
    let mut level = 0;
    let mut bound = LEVEL_FLOOR;
    while size > bound {
        level += 1;
        bound = bound.saturating_mul(LEVEL_FACTOR);
    }
    level
}

/// Groups of segments to merge, given each segment's size and deleted share.
pub fn plan(segments: &[(u64, f64)]) -> Vec<Vec<usize>> {
    let mut out: Vec<Vec<usize>> = Vec::new();
    let mut small: Vec<usize> = (0..segments.len())
        .filter(|&i| segments[i].0 <= SMALL_SEGMENT)
        .collect();
    small.sort_by_key(|&i| (level(segments[i].0), segments[i].0));
    let mut group: Vec<usize> = Vec::new();
    let mut total = 0u64;
    let flush = |group: &mut Vec<usize>, out: &mut Vec<Vec<usize>>| {
        if group.len() >= MIN_GROUP {
            out.push(std::mem::take(group));
        } else {
            group.clear();
        }
    };
    for i in small {
        let size = segments[i].0;
        let other_level = group
            .last()
            .is_some_and(|&g| level(segments[g].0) != level(size));
        if other_level || (!group.is_empty() && total.saturating_add(size) > MERGE_INPUT_MAX) {
            flush(&mut group, &mut out);
            total = 0;
        }
        group.push(i);
        total = total.saturating_add(size);
    }
    flush(&mut group, &mut out);
    // Mostly deleted segments: rewritten alone, if one merge may read them.
    let grouped: Vec<usize> = out.iter().flatten().copied().collect();
    for (i, &(size, deleted)) in segments.iter().enumerate() {
        if deleted > DELETED_SHARE && size <= MERGE_INPUT_MAX && !grouped.contains(&i) {
            out.push(vec![i]);
        }
    }
    out
}

impl MergePolicy for BoundedMerges {
    fn compute_merge_candidates(&self, segments: &[SegmentMeta]) -> Vec<MergeCandidate> {
        let sized: Vec<(u64, f64)> = segments
            .iter()
            .map(|s| {
                let deleted = f64::from(s.num_deleted_docs()) / f64::from(s.max_doc().max(1));
                (self.size(s), deleted)
            })
            .collect();
        plan(&sized)
            .into_iter()
            .map(|group| MergeCandidate(group.into_iter().map(|i| segments[i].id()).collect()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    #[test]
    fn segments_of_one_level_merge_in_groups_bounded_by_size() {
        // Five 200 KiB segments (level 0) and two larger ones: the small ones merge.
        let mut segments = vec![(200 << 10, 0.0); 5];
        segments.push((40 * MIB, 0.0));
        segments.push((20 * MIB, 0.0));
        assert_eq!(plan(&segments), vec![(0..5).collect::<Vec<_>>()]);
        // Fewer than four of a level: nothing to do.
        assert!(plan(&segments[2..]).is_empty());
    }

    #[test]
    fn a_merged_segment_waits_for_others_of_its_size() {
        // One 8 MiB segment (a level above) and four tiny ones: only the tiny ones merge,
        // the large one is not rewritten with them.
        let segments = vec![
            (8 * MIB, 0.0),
            (100 << 10, 0.0),
            (100 << 10, 0.0),
            (100 << 10, 0.0),
            (100 << 10, 0.0),
        ];
        assert_eq!(plan(&segments), vec![vec![1, 2, 3, 4]]);
        assert_eq!((level(MIB), level(MIB + 1), level(4 * MIB + 1)), (0, 1, 2));
    }

    #[test]
    fn no_merge_reads_more_than_the_bound() {
        // Twenty 18 MiB segments (a first build): groups of five (90 MiB).
        let segments = vec![(18 * MIB, 0.0); 20];
        let groups = plan(&segments);
        assert_eq!(
            groups.iter().map(Vec::len).collect::<Vec<_>>(),
            [5, 5, 5, 5]
        );
        for group in groups {
            let total: u64 = group.iter().map(|&i| segments[i].0).sum();
            assert!(total <= MERGE_INPUT_MAX, "{total}");
        }
        // Segments above a third of the bound are left alone.
        assert!(plan(&vec![(SMALL_SEGMENT + 1, 0.0); 20]).is_empty());
    }

    #[test]
    fn mostly_deleted_segments_are_rewritten_when_a_merge_may_read_them() {
        let segments = vec![(30 * MIB, 0.6), (30 * MIB, 0.2), (200 * MIB, 0.9)];
        assert_eq!(plan(&segments), vec![vec![0]]);
    }
}
