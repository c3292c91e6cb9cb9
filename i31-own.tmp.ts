import { readFileSync } from 'node:fs';
import ts from 'typescript';
const [file, fname] = process.argv.slice(2);
const text = readFileSync(file, 'utf8');
const sf = ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, true);
const line = (pos: number) => sf.getLineAndCharacterOfPosition(pos).line;
let target: ts.Node | undefined;
const find = (n: ts.Node) => { if (ts.isFunctionLike(n) && (n as any).name?.getText(sf) === fname && (n as any).body) target ??= n; ts.forEachChild(n, find); };
find(sf);
const body = (target as any).body as ts.Node;
const covered = new Set<number>();
const nested = (n: ts.Node): void => { for (const c of n.getChildren(sf)) { const inner = ts.isFunctionLike(c) ? (c as any).body : undefined; if (inner) { for (let l = line(inner.getStart(sf)); l <= line(inner.end); l++) covered.add(l); } else nested(c); } };
nested(body);
const lines = text.split('\n');
let count = 0;
for (let l = line(body.getStart(sf)); l <= line(body.end); l++) if (!covered.has(l)) { count++; console.log(String(l + 1).padStart(4), lines[l]); }
console.log('own', count);
