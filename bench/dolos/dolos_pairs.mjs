// Dolos (@dodona/dolos-lib) on one set of files, for bench/similarity.py: reads
// {"files": [[name, path], ...], "ignore": path or null, "k": int or null, "window": int or null}
// on stdin and prints one JSON line per pair:
// [name_a, name_b, similarity, covered_a, covered_b, total_a, total_b, ignored_a, ignored_b, longest]
// Run from a folder where `npm install @dodona/dolos-lib@3.5.1` was done (NODE_PATH is not
// read by ES modules: the bench gives this script's copy in that folder).
import { Dolos } from "@dodona/dolos-lib";
import { readFileSync } from "node:fs";

const job = JSON.parse(readFileSync(0, "utf-8"));
const options = { language: "python" };
if (job.k) options.kgramLength = job.k;
if (job.window) options.kgramsInWindow = job.window;
const dolos = new Dolos(options);
const names = new Map(job.files.map(([name, path]) => [path, name]));
const report = await dolos.analyzePaths(job.files.map(([, path]) => path), job.ignore || undefined);
const name = (file) => names.get(file.path) ?? file.path;
const entries = new Map(report.entries().map((e) => [e.file.path, e]));
for (const pair of report.allPairs()) {
  const left = entries.get(pair.leftFile.path), right = entries.get(pair.rightFile.path);
  console.log(JSON.stringify([name(pair.leftFile), name(pair.rightFile), pair.similarity,
    pair.leftCovered, pair.rightCovered, pair.leftTotal, pair.rightTotal,
    left ? left.ignored.size : 0, right ? right.ignored.size : 0, pair.longest]));
}
