#!/usr/bin/env python3
"""Groups a perf profile's symbols into the categories of docs/compaction.md.

Usage: python3 bench/perf_categories.py perf.data
"""
import re, subprocess, sys, collections
out = subprocess.run(["perf", "report", "-i", sys.argv[1], "--no-children", "--sort", "sym", "--stdio", "-g", "none"],
                     capture_output=True, text=True).stdout
cats = collections.OrderedDict([
  ("decompression (zstd)", r"ZSTD_d|ZSTD_createDCtx|HUF_decompress|ZSTD_decompress|ZSTD_buildFSE|ZSTD_execSeq|ZSTD_copy|ZSTD_decode|FSE_decode|HUF_readDTable"),
  ("compression (zstd)", r"ZSTD_c|ZSTD_compress|HUF_compress|HIST_|ZSTD_createCCtx|FSE_|ZSTD_encode|ZSTD_build|ZSTD_ldm|HUF_"),
  ("decode (Parquet -> Arrow)", r"Decode|Decoder|unpack|Rle|bpacking|Builder.*Append|ReadRecord|LevelDecoder|BitReader"),
  ("encode (Arrow -> Parquet)", r"Encoder|Encode|Put|WriteDict|WriteIndices|MemoTable|HashTable|Upsize|GetMinMax|Statistics|Comparator|Bloom|XXH|RleEncoder|BitWriter"),
  ("memory copies", r"memmove|memcpy|copy_folio|_copy_to_iter|copy_user|copy_page"),
  ("allocation, page faults", r"malloc|free|memset|clear_page|je_|jemalloc|arena|extent|tcache|page_fault|mmap|munmap|_int_|unlink_chunk|madvise|folio|alloc_pages|zap_pte|release_pages"),
  ("thread hand-offs", r"futex|spin_unlock|try_to_wake|schedule|switch|pthread_cond"),
])
acc = collections.Counter(); total = 0
for line in out.splitlines():
    m = re.match(r"\s+([0-9.]+)%\s+\[[.k]\]\s+(.*)", line)
    if not m: continue
    pct, sym = float(m.group(1)), m.group(2)
    total += pct
    for c, rx in cats.items():
        if re.search(rx, sym):
            acc[c] += pct; break
    else:
        acc["other (kernel I/O, Thrift, misc)"] += pct
for c, v in sorted(acc.items(), key=lambda x: -x[1]):
    print(f"| {c} | {v:.0f}% |")
