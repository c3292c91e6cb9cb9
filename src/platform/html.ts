/** Server-rendered pages: escaping, one layout, one stylesheet. No build step. */
import type { Response } from 'express';

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

export function escapeHtml(value: unknown): string {
  return String(value).replace(/[&<>"']/g, (c) => ESCAPES[c] ?? c);
}

/** Tagged template: every interpolation is escaped unless wrapped in `raw()`. */
export interface SafeHtml {
  readonly __html: string;
}

export function raw(html: string): SafeHtml {
  return { __html: html };
}

export function html(strings: TemplateStringsArray, ...values: unknown[]): SafeHtml {
  let out = strings[0] ?? '';
  values.forEach((v, i) => {
    out += render(v) + (strings[i + 1] ?? '');
  });
  return { __html: out };
}

function render(v: unknown): string {
  if (v === null || v === undefined || v === false) return '';
  if (Array.isArray(v)) return v.map(render).join('');
  if (typeof v === 'object' && '__html' in v) return (v as SafeHtml).__html;
  return escapeHtml(v);
}

export const PLATFORM_CSS = `
:root{--fg:#1f2933;--muted:#616e7c;--line:#e4e7eb;--bg:#f5f7fa;--card:#fff;--accent:#3b5bdb;--danger:#c92a2a;--ok:#2b8a3e}
*{box-sizing:border-box}
body{margin:0;font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg)}
header.top{background:#1f2933;color:#fff;padding:12px 24px;display:flex;gap:24px;align-items:center}
header.top a{color:#cbd2d9;text-decoration:none}header.top a:hover{color:#fff}
header.top strong{font-size:16px;color:#fff}
main{max-width:960px;margin:24px auto;padding:0 16px}
main.wide{max-width:none;margin:0;padding:0}
h1{font-size:22px;margin:0 0 16px}h2{font-size:17px;margin:24px 0 8px}
.card>h1:first-child,.card>h2:first-child{margin-top:0}
.card{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:20px;margin-bottom:16px}
table{width:100%;border-collapse:collapse}th,td{text-align:left;padding:8px;border-bottom:1px solid var(--line);vertical-align:top}
th{font-size:13px;color:var(--muted);font-weight:600}
label{display:block;margin:10px 0 4px;font-weight:600;font-size:14px}
input[type=text],input[type=url],select{width:100%;padding:8px;border:1px solid #cbd2d9;border-radius:6px;font:inherit}
.scopes{columns:2;margin:4px 0}.scopes label{font-weight:400;margin:2px 0}
button,.button{display:inline-block;padding:8px 16px;border-radius:6px;border:1px solid var(--accent);background:var(--accent);color:#fff;font:inherit;cursor:pointer;text-decoration:none}
button.secondary,.button.secondary{background:#fff;color:var(--accent)}
button.danger{background:#fff;color:var(--danger);border-color:var(--danger)}
form.inline{display:inline}
.actions{display:flex;gap:8px;flex-wrap:wrap;align-items:center}
td.right{text-align:right;white-space:nowrap}
.muted{color:var(--muted)}code,.secret{font-family:ui-monospace,Menlo,monospace;font-size:13px;background:#f0f4f8;padding:2px 6px;border-radius:4px;word-break:break-all}
.error{border-left:4px solid var(--danger)}.notice{border-left:4px solid var(--ok)}
ul.scope-list{padding-left:18px}ul.scope-list li{margin:4px 0}
.badge{display:inline-block;padding:1px 8px;border-radius:10px;font-size:12px;background:#e4e7eb}
.badge.succeeded{background:#d3f9d8;color:var(--ok)}.badge.failed{background:#ffe3e3;color:var(--danger)}.badge.pending{background:#fff3bf}
iframe.app{width:100%;height:calc(100vh - 110px);border:0;background:#fff}
.bar{padding:8px 24px;background:#fff;border-bottom:1px solid var(--line);display:flex;gap:16px;align-items:center}
.url{overflow-wrap:anywhere}
@media (max-width:640px){table.stack thead{display:none}table.stack tr,table.stack td{display:block}table.stack tr{border-bottom:1px solid var(--line);padding:8px 0}table.stack td{border:0;padding:4px 0}table.stack td.right{text-align:left;white-space:normal}}
`;

export interface PageOptions {
  title: string;
  body: SafeHtml;
  status?: number;
  /** Admin pages frame apps; every other page refuses to be framed. */
  frameSrc?: string;
  wide?: boolean;
  nav?: boolean;
}

export function sendPage(res: Response, page: PageOptions): void {
  const frameSrc = page.frameSrc ?? "'none'";
  res.status(page.status ?? 200);
  res.set({
    'Content-Type': 'text/html; charset=utf-8',
    'Cache-Control': 'no-store',
    'X-Content-Type-Options': 'nosniff',
    // same-origin, not no-referrer: with no-referrer browsers send `Origin: null` on form posts,
    // which the same-origin CSRF check must refuse.
    'Referrer-Policy': 'same-origin',
    'X-Frame-Options': 'DENY',
    'Content-Security-Policy': `default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self' http: https:; frame-src ${frameSrc}; frame-ancestors 'none'; base-uri 'none'`,
  });
  const nav =
    page.nav === false
      ? ''
      : html`<header class="top"><strong>Merchant Store Platform</strong><a href="/admin">Admin</a><a href="/dashboard">Developer dashboard</a></header>`;
  const doc = html`<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><title>${page.title}</title><link rel="stylesheet" href="/assets/platform.css"></head><body>${nav}<main${raw(page.wide ? ' class="wide"' : '')}>${page.body}</main></body></html>`;
  res.send(doc.__html);
}
