//! `augur matrix` and `augur features`: matrices described, written, sharded and characterised.

use super::*;

#[test]
fn matrix_info_json_on_specs_and_files() {
    let f = write_file(
        "tiny.mtx",
        b"%%MatrixMarket matrix coordinate real general\n3 4 3\n1 1 1\n1 4 2\n3 2 3\n",
    );
    let v = json_ok(&[
        "matrix",
        "info",
        "--json",
        "stencil2d:nx=10",
        f.to_str().unwrap(),
    ]);
    let a = v.as_array().unwrap();
    assert_eq!(a.len(), 2);
    assert_eq!(a[0]["name"], "stencil2d:nx=10,ny=10,points=5");
    assert_eq!(a[0]["nnz"], 460);
    assert_eq!(a[0]["row_len_max"], 5);
    assert_eq!(a[1]["name"], "tiny");
    assert_eq!(
        (a[1]["rows"].as_u64(), a[1]["cols"].as_u64()),
        (Some(3), Some(4))
    );
    assert_eq!(a[1]["empty_rows"], 1);
    assert_eq!(a[1]["load"]["header"]["symmetry"], "general");
    assert!(a[1]["text_mb_per_s"].as_f64().unwrap() > 0.0);
}

#[test]
fn matrix_info_text_and_a_bad_file_among_good_ones() {
    let bad = write_file(
        "bad.mtx",
        b"%%MatrixMarket matrix coordinate real general\n3 3 2\n1 1 1\n4 1 1\n",
    );
    let out = augur(&[
        "matrix",
        "info",
        "arrowhead:n=5",
        bad.to_str().unwrap(),
        "banded:n=9",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let (so, se) = (text(&out.stdout), text(&out.stderr));
    // The good ones are still reported; the bad one names file and line.
    assert!(so.contains("arrowhead:n=5,seed=1: 5 x 5, nnz 13"), "{so}");
    assert!(so.contains("banded:n=9"), "{so}");
    assert!(
        se.contains(&format!("{}:4: row index 4 is out of range", bad.display())),
        "{se}"
    );
}

#[test]
fn matrix_write_then_info_round_trip() {
    let p = temp_dir("cli-write").join("g.mtx.gz");
    let out = augur(&[
        "matrix",
        "write",
        "blockdiag:n=50,block=7",
        p.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = augur(&["matrix", "info", "--json", p.to_str().unwrap()]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v[0]["nnz"], 7 * 49 + 1);
}

#[test]
fn matrix_shards_reports_halo_and_all_gather_volumes() {
    let out = augur(&[
        "matrix",
        "shards",
        "--csv",
        "--parts",
        "2",
        "stencil2d:nx=10",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "matrix,parts,rank,first_row,rows,nnz,halo_entries,allgather_entries\n\
         \"stencil2d:nx=10,ny=10,points=5\",2,0,0,50,230,10,50\n\
         \"stencil2d:nx=10,ny=10,points=5\",2,1,50,50,230,10,50\n"
    );
    let out = augur(&["matrix", "shards", "tall:rows=50,cols=20,nnz=100"]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("square"),
        "{}",
        text(&out.stderr)
    );
}

/// `augur matrix --help` lists every generator with its parameters (the top help points there).
#[test]
fn matrix_help_lists_every_generator() {
    let out = augur(&["matrix", "--help"]);
    assert!(out.status.success());
    let t = text(&out.stdout);
    for kind in augur_datasets::generate::KINDS {
        assert!(t.contains(kind), "`{kind}` missing from:\n{t}");
    }
    assert!(t.contains("order natural|random|rcm"), "{t}");
}

#[test]
fn features_csv_and_json() {
    let out = augur(&["features", "stencil2d:nx=20", "arrowhead:n=100"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let so = text(&out.stdout);
    let lines: Vec<&str> = so.lines().collect();
    assert_eq!(lines.len(), 3, "{so}");
    assert!(
        lines[0].starts_with("name,rows,cols,nnz,density,mean_row_len,"),
        "{so}"
    );
    assert!(
        lines[2].starts_with("\"arrowhead:n=100,seed=1\",100,100,298,"),
        "{so}"
    );
    let v = json_ok(&["features", "--json", "--known-only", "banded:n=50,bw=2"]);
    assert_eq!(v[0]["schema_version"], 3);
    assert_eq!(v[0]["features"]["rows"], 50.0);
    assert!(
        v[0]["features"]["row_len_max"].is_null(),
        "not gathered: {v}"
    );
    assert!(v[0]["cost"]["gathered_s"].is_null());
}

#[test]
fn features_of_shapes_and_schemas() {
    let out = augur(&[
        "features",
        "--kind",
        "attention",
        "attention:q_heads=16,kv_heads=2,lens=100*3",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let so = text(&out.stdout);
    assert!(
        so.starts_with("name,batch,q_heads,kv_heads,gqa_group,"),
        "{so}"
    );
    assert!(so.contains("\",3,16,2,8,128,2,1,100,"), "{so}");

    let out = augur(&[
        "features",
        "--kind",
        "message",
        "--json",
        "message:collective=all-reduce,bytes=1MiB,world=2",
        "message:collective=all-reduce,bytes=1MiB,world=2,link=infiniband",
    ]);
    assert_eq!(out.status.code(), Some(1), "one bad spec among good ones");
    assert!(text(&out.stderr).contains("link `infiniband`"));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v.as_array().unwrap().len(), 1);
    assert_eq!(v[0]["features"]["bus_bytes"], 1048576.0);

    for (kind, version) in [("spmv", 3), ("attention", 1), ("message", 1)] {
        let v = json_ok(&["features", "--kind", kind, "--schema"]);
        assert_eq!(v["name"], kind);
        assert_eq!(v["version"], version);
        assert!(v["features"].as_array().unwrap().len() >= 16);
    }
}
