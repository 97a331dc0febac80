// SPDX-License-Identifier: MIT
/*
 * An interactive flame graph as one self-contained SVG: open it in any
 * browser, no network, no other file. Root at the bottom, each frame a
 * rectangle as wide as its share of samples, children sorted by name so
 * that two graphs of the same program can be compared by eye. Hover shows a
 * frame's details, click zooms into it, "Search" highlights frames matching
 * a regular expression and reports the share of samples they cover.
 *
 * Colors go by family, so that where time goes reads at a glance: warm for
 * the program's own code, green for site-packages, blue for the standard
 * library, grey for markers (processes, threads, truncation). Within a
 * family the hue follows the file and the shade the function, so one
 * module's frames look alike and stay the same from run to run.
 */
#include "profile.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define IMG_W	  1200
#define XPAD	  10
#define FRAME_H	  16
#define FONT_SIZE 12
#define FONT_W	  0.59 /* average glyph width per point of Verdana */
#define TOP	  60   /* title, subtitle and buttons */
#define BOTTOM	  34   /* the details line */
#define MIN_W	  0.1  /* narrower frames are left out, as nobody can see them */

enum { K_ROOT, K_PID, K_TID, K_FRAME };

struct node {
	uint32_t kind, val; /* K_*, and pid, tid or frame key */
	uint32_t parent, first, next, nchild;
	uint64_t count;
	uint64_t base; /* svg_write_diff: BASE's count; count is NEW's */
	char *label;   /* set when drawn */
};

struct tree {
	struct node *n;
	uint32_t len, cap;
	uint32_t *slot; /* child index: (parent, kind, val) -> node + 1 */
	uint32_t scap;
};

static uint32_t slot_hash(uint32_t parent, uint32_t kind, uint32_t val)
{
	uint64_t h = ((uint64_t)parent * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)kind << 32 | val);

	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ull;
	return (uint32_t)(h ^ (h >> 32));
}

static int tree_rehash(struct tree *t)
{
	uint32_t ncap = t->scap ? t->scap * 2 : 1024;
	uint32_t *ns = calloc(ncap, sizeof(*ns));

	if (!ns)
		return -1;
	for (uint32_t i = 1; i < t->len; i++) {
		const struct node *c = &t->n[i];
		uint32_t j = slot_hash(c->parent, c->kind, c->val) & (ncap - 1);

		while (ns[j])
			j = (j + 1) & (ncap - 1);
		ns[j] = i + 1;
	}
	free(t->slot);
	t->slot = ns;
	t->scap = ncap;
	return 0;
}

/* The child of parent for (kind, val), made if missing. UINT32_MAX: ENOMEM. */
static uint32_t tree_child(struct tree *t, uint32_t parent, uint32_t kind, uint32_t val)
{
	uint32_t j;

	if ((t->len + 1) * 2 > t->scap && tree_rehash(t))
		return UINT32_MAX;
	for (j = slot_hash(parent, kind, val) & (t->scap - 1); t->slot[j];
	     j = (j + 1) & (t->scap - 1)) {
		const struct node *c = &t->n[t->slot[j] - 1];

		if (c->parent == parent && c->kind == kind && c->val == val)
			return t->slot[j] - 1;
	}
	if (t->len == t->cap) {
		uint32_t ncap = t->cap ? t->cap * 2 : 1024;
		struct node *nn = realloc(t->n, ncap * sizeof(*nn));

		if (!nn)
			return UINT32_MAX;
		t->n = nn;
		t->cap = ncap;
	}
	memset(&t->n[t->len], 0, sizeof(t->n[0]));
	t->n[t->len].kind = kind;
	t->n[t->len].val = val;
	t->n[t->len].parent = parent;
	t->n[t->len].first = UINT32_MAX;
	t->n[t->len].next = t->n[parent].first;
	t->n[parent].first = t->len;
	t->n[parent].nchild++;
	t->slot[j] = t->len + 1;
	return t->len++;
}

/* The first n characters (code points, not bytes) of s, for labels that
 * must fit their rectangle. Returns the byte length. */
static size_t utf8_prefix(const char *s, size_t nchars)
{
	size_t i = 0;

	for (; s[i] && nchars; nchars--) {
		i++;
		while ((s[i] & 0xc0) == 0x80)
			i++;
	}
	return i;
}

static size_t utf8_len(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += (*s & 0xc0) != 0x80;
	return n;
}

static uint32_t str_hash(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

static void node_color(const struct profile *p, const struct node *nd, int no_lines, char *buf,
		       size_t len)
{
	const struct prof_func *fn;
	const char *file, *name;
	uint32_t hf, hn;
	int hue, sat, light;

	if (nd->kind != K_FRAME) {
		snprintf(buf, len, "rgb(180,180,180)");
		return;
	}
	fn = &p->funcs[no_lines ? nd->val : p->frames[nd->val].func];
	file = profile_str(p, fn->file);
	name = profile_str(p, fn->name);
	hf = str_hash(file);
	hn = str_hash(name);
	sat = 65 + (int)(hn % 20);
	light = 55 + (int)((hn >> 8) % 15);
	if (fn->kind == FRAME_KIND_NATIVE) { /* C code: violet, by library */
		hue = 255 + (int)(hf % 40);
	} else if (fn->kind == FRAME_KIND_KERNEL) { /* the kernel: magenta */
		hue = 315 + (int)(hn % 25);
	} else if (!*file || fn->kind == FRAME_KIND_MARK) { /* marks: grey */
		snprintf(buf, len, "rgb(170,170,170)");
		return;
	} else if (strstr(file, "site-packages") || strstr(file, "dist-packages")) {
		hue = 85 + (int)(hf % 50);
	} else if (strstr(file, "/lib/python") || strstr(file, "<frozen")) {
		hue = 185 + (int)(hf % 40);
	} else {
		hue = (int)(hf % 50);
	}
	snprintf(buf, len, "hsl(%d,%d%%,%d%%)", hue, sat, light);
}

static const struct profile *sort_p;
static const struct tree *sort_t;

static int child_cmp(const void *a, const void *b)
{
	const struct node *x = &sort_t->n[*(const uint32_t *)a];
	const struct node *y = &sort_t->n[*(const uint32_t *)b];

	return strcmp(x->label, y->label);
}

struct draw {
	FILE *f;
	const struct profile *p;
	const struct profile_out_opts *o;
	struct tree *t;
	double scale; /* pixels per sample */
	uint32_t height;
	int diff;	   /* svg_write_diff: colours and tooltips by change */
	double max_change; /* the largest |change| of a node, in shares */
};

/* svg_write_diff: a node's share of NEW minus its share of BASE. */
static double node_change(const struct draw *dr, const struct node *nd)
{
	const struct node *root = &dr->t->n[0];

	return (root->count ? (double)nd->count / root->count : 0) -
	       (root->base ? (double)nd->base / root->base : 0);
}

/* Red where the share grew, blue where it shrank, white-ish where it
 * stayed; the depth of the colour is the change over the largest one. */
static void diff_color(const struct draw *dr, const struct node *nd, char *buf, size_t len)
{
	double c = node_change(dr, nd), v = dr->max_change > 0 ? fabs(c) / dr->max_change : 0;
	int w = (int)(230 * (1 - v) + 0.5);

	if (c > 0)
		snprintf(buf, len, "rgb(255,%d,%d)", w, w);
	else if (c < 0)
		snprintf(buf, len, "rgb(%d,%d,255)", w, w);
	else
		snprintf(buf, len, "rgb(230,230,230)");
}

static int node_label(struct draw *dr, struct node *nd)
{
	char buf[4096];

	if (nd->label)
		return 0;
	if (nd->kind == K_ROOT) {
		snprintf(buf, sizeof(buf), "all");
	} else if (nd->kind == K_PID) {
		const char *comm = profile_comm(dr->p, nd->val);

		snprintf(buf, sizeof(buf), "pid:%u (%s)", nd->val, comm ? comm : "?");
	} else if (nd->kind == K_TID) {
		snprintf(buf, sizeof(buf), "tid:%u", nd->val);
	} else {
		profile_frame_label(dr->p, nd->val, dr->o->no_lines, 0, buf, sizeof(buf));
	}
	nd->label = strdup(buf);
	return nd->label ? 0 : -1;
}

/* Draw node id at x (in samples) and depth, then its children. Recursion
 * depth is bounded by the deepest stack (BPFPY_MAX_DEPTH plus markers). */
static int draw_node(struct draw *dr, uint32_t id, uint64_t x, uint32_t depth)
{
	struct node *nd = &dr->t->n[id];
	double px = XPAD + x * dr->scale, pw = nd->count * dr->scale;
	double y = dr->height - BOTTOM - (depth + 1) * FRAME_H;
	uint32_t *kids, k = 0;
	char color[64];
	size_t chars;
	int rc = 0;

	if (pw < MIN_W)
		return 0;
	if (node_label(dr, nd))
		return -1;
	if (dr->diff)
		diff_color(dr, nd, color, sizeof(color));
	else
		node_color(dr->p, nd, dr->o->no_lines, color, sizeof(color));
	fputs("<g class=\"f\"><title>", dr->f);
	out_put_markup(dr->f, nd->label);
	if (dr->diff)
		fprintf(dr->f, "\nnew %.2f%% (%llu), base %.2f%% (%llu), change %+.2f points",
			100.0 * nd->count / dr->t->n[0].count, (unsigned long long)nd->count,
			dr->t->n[0].base ? 100.0 * nd->base / dr->t->n[0].base : 0.0,
			(unsigned long long)nd->base, 100 * node_change(dr, nd));
	else
		fprintf(dr->f, "\n%llu %s, %.2f%%", (unsigned long long)nd->count,
			dr->p->weighted ? "ns" : "samples", 100.0 * nd->count / dr->t->n[0].count);
	fprintf(dr->f,
		"</title><rect x=\"%.1f\" y=\"%.0f\" width=\"%.1f\" "
		"height=\"%d\" fill=\"%s\" rx=\"2\"/><text x=\"%.1f\" y=\"%.0f\">",
		px, y, pw, FRAME_H - 1, color, px + 3, y + FRAME_H - 4);
	chars = (size_t)((pw - 6) / (FONT_SIZE * FONT_W));
	if (chars >= utf8_len(nd->label)) {
		out_put_markup(dr->f, nd->label);
	} else if (chars >= 3) {
		char *cut = strndup(nd->label, utf8_prefix(nd->label, chars - 2));

		if (!cut)
			return -1;
		out_put_markup(dr->f, cut);
		fputs("..", dr->f);
		free(cut);
	}
	fputs("</text></g>\n", dr->f);

	if (!nd->nchild)
		return 0;
	kids = malloc(nd->nchild * sizeof(*kids));
	if (!kids)
		return -1;
	for (uint32_t c = nd->first; c != UINT32_MAX; c = dr->t->n[c].next) {
		if (node_label(dr, &dr->t->n[c])) {
			free(kids);
			return -1;
		}
		kids[k++] = c;
	}
	sort_p = dr->p;
	sort_t = dr->t;
	qsort(kids, k, sizeof(*kids), child_cmp);
	for (uint32_t i = 0; i < k && !rc; i++) {
		rc = draw_node(dr, kids[i], x, depth + 1);
		x += dr->t->n[kids[i]].count;
	}
	free(kids);
	return rc;
}

/* The viewer: zoom, search, details. Written for this file's layout. */
static const char script[] =
    "var frames=[],details,matchedEl,unzoomEl,searchEl,searching=false;\n"
    "var W=0,PAD=0,FW=0;\n"
    "function init(evt){\n"
    " var "
    "svg=document.documentElement;W=+svg.getAttribute('data-w');PAD=+svg.getAttribute('data-pad');"
    "\n"
    " FW=W-2*PAD;details=document.getElementById('details');\n"
    " matchedEl=document.getElementById('matched');unzoomEl=document.getElementById('unzoom');\n"
    " searchEl=document.getElementById('search');\n"
    " var gs=document.getElementsByClassName('f');\n"
    " for(var i=0;i<gs.length;i++){var g=gs[i],r=g.getElementsByTagName('rect')[0];\n"
    "  var t=g.getElementsByTagName('title')[0].textContent.split('\\n');\n"
    "  var fr={g:g,r:r,t:g.getElementsByTagName('text')[0],x:+r.getAttribute('x'),\n"
    "   w:+r.getAttribute('width'),y:+r.getAttribute('y'),label:t[0],info:t[1],\n"
    "   fill:r.getAttribute('fill')};frames.push(fr);\n"
    "  g.onmouseover=(function(fr){return function(){details.textContent=fr.label+' \\u2014 "
    "'+fr.info;};})(fr);\n"
    "  g.onmouseout=function(){details.textContent=' ';};\n"
    "  g.onclick=(function(fr){return function(){zoom(fr);};})(fr);}\n"
    " unzoomEl.onclick=function(){zoom(null);};searchEl.onclick=function(){search();};\n"
    " window.addEventListener('keydown',function(e){if((e.ctrlKey||e.metaKey)&&e.key=='f'){e."
    "preventDefault();search();}});\n"
    "}\n"
    "function "
    "fit(fr,x,w){fr.r.setAttribute('x',x.toFixed(1));fr.r.setAttribute('width',w.toFixed(1));\n"
    " fr.t.setAttribute('x',(x+3).toFixed(1));var n=Math.floor((w-6)/(12*0.59));\n"
    " var "
    "cs=Array.from(fr.label);fr.t.textContent=n>=cs.length?fr.label:(n>=3?cs.slice(0,n-2).join('')+"
    "'..':'');}\n"
    "function zoom(z){\n"
    " unzoomEl.style.opacity=z?1:0;\n"
    " for(var i=0;i<frames.length;i++){var "
    "fr=frames[i];fr.g.style.display='';fr.g.style.opacity=1;\n"
    "  if(!z){fit(fr,fr.x,fr.w);continue;}\n"
    "  var e=0.0001;if(fr.x+fr.w<=z.x+e||fr.x>=z.x+z.w-e){fr.g.style.display='none';continue;}\n"
    "  if(fr.y>z.y){fit(fr,PAD,FW);fr.g.style.opacity=0.6;continue;}\n"
    "  var k=FW/z.w;fit(fr,PAD+(fr.x-z.x)*k,fr.w*k);}\n"
    "}\n"
    "function search(){\n"
    " if(searching){searching=false;searchEl.textContent='Search';matchedEl.textContent=' ';\n"
    "  for(var i=0;i<frames.length;i++)frames[i].r.setAttribute('fill',frames[i].fill);return;}\n"
    " var s=prompt('Search frames (regular expression):','');if(!s)return;var re;\n"
    " try{re=new RegExp(s);}catch(e){alert(e);return;}\n"
    " var iv=[];for(var i=0;i<frames.length;i++){var fr=frames[i];\n"
    "  "
    "if(re.test(fr.label)){fr.r.setAttribute('fill','rgb(230,0,230)');iv.push([fr.x,fr.x+fr.w]);}}"
    "\n"
    " iv.sort(function(a,b){return a[0]-b[0];});var sum=0,end=-1;\n"
    " for(var i=0;i<iv.length;i++){var "
    "a=Math.max(iv[i][0],end);if(iv[i][1]>a)sum+=iv[i][1]-a;end=Math.max(end,iv[i][1]);}\n"
    " searching=true;searchEl.textContent='Reset search';\n"
    " matchedEl.textContent='Matched: '+(100*sum/FW).toFixed(2)+'%';\n"
    "}\n";

static int svg_render(FILE *f, const struct profile *p, const struct profile_out_opts *o,
		      struct diag *d, int diff, uint32_t base_pid)
{
	struct tree t = {0};
	struct draw dr = {f, p, o, &t, 0, 0, diff, 0};
	uint32_t maxdepth = 0;
	char sub[256];
	int rc = -1;

	/* Node 0 is the root, "all". */
	t.cap = 1024;
	t.n = calloc(t.cap, sizeof(*t.n));
	if (!t.n || tree_rehash(&t))
		goto oom;
	t.n[0].first = UINT32_MAX;
	t.len = 1;
	for (uint32_t i = 0; i < p->nstacks; i++) {
		const struct prof_stack *st = &p->stacks[i];
		const struct prof_thread *th = &p->threads[st->thread];
		uint32_t cur = 0, depth = st->nframes;
		int base = diff && th->pid == base_pid;

		if (o->threads && !diff) {
			cur = tree_child(&t, cur, K_PID, th->pid);
			if (cur != UINT32_MAX)
				cur = tree_child(&t, cur, K_TID, th->tid);
			if (cur == UINT32_MAX)
				goto oom;
			t.n[t.n[cur].parent].count += profile_stack_value(p, st);
			t.n[cur].count += profile_stack_value(p, st);
			depth += 2;
		}
		for (uint32_t j = st->nframes; j-- > 0;) {
			cur = tree_child(&t, cur, K_FRAME,
					 profile_frame_key(p, st->frames[j], o->no_lines));
			if (cur == UINT32_MAX)
				goto oom;
			*(base ? &t.n[cur].base : &t.n[cur].count) += profile_stack_value(p, st);
		}
		*(base ? &t.n[0].base : &t.n[0].count) += profile_stack_value(p, st);
		if (depth > maxdepth)
			maxdepth = depth;
	}

	for (uint32_t i = 0; diff && i < t.len; i++)
		if (fabs(node_change(&dr, &t.n[i])) > dr.max_change)
			dr.max_change = fabs(node_change(&dr, &t.n[i]));
	dr.height = TOP + BOTTOM + (maxdepth + 1) * FRAME_H;
	dr.scale = t.n[0].count ? (double)(IMG_W - 2 * XPAD) / t.n[0].count : 0;
	if (diff)
		snprintf(sub, sizeof(sub),
			 "widths: NEW (%llu); red: a larger share than in BASE (%llu), blue: "
			 "smaller; deepest: %.2f points",
			 (unsigned long long)t.n[0].count, (unsigned long long)t.n[0].base,
			 100 * dr.max_change);
	else if (p->weighted) /* widths are nanoseconds, not samples */
		snprintf(sub, sizeof(sub), "%.3f s, %s clock, %llu samples and intervals%s",
			 t.n[0].count / 1e9, p->clock, (unsigned long long)p->total,
			 p->nempty ? " (plus failed walks, not drawn)" : "");
	else
		snprintf(sub, sizeof(sub), "%llu samples, %s clock, one every %.3f ms%s",
			 (unsigned long long)t.n[0].count, p->clock, p->period_ns / 1e6,
			 p->nempty ? " (plus failed walks, not drawn)" : "");

	fprintf(
	    f,
	    "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
	    "<svg version=\"1.1\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
	    "height=\"%u\" viewBox=\"0 0 %d %u\" onload=\"init(evt)\" data-w=\"%d\" "
	    "data-pad=\"%d\">\n"
	    "<style type=\"text/css\">\n"
	    "text { font-family: Verdana, 'DejaVu Sans', sans-serif; font-size: %dpx; fill: "
	    "rgb(0,0,0); }\n"
	    ".f text { pointer-events: none; }\n"
	    ".f:hover rect { stroke: rgb(0,0,0); stroke-width: 0.5; cursor: pointer; }\n"
	    "#title { font-size: 17px; text-anchor: middle; }\n"
	    "#sub { fill: rgb(90,90,90); text-anchor: middle; }\n"
	    "#unzoom, #search { cursor: pointer; fill: rgb(0,0,160); }\n"
	    "#unzoom { opacity: 0; }\n"
	    "#matched { text-anchor: end; }\n"
	    "</style>\n"
	    "<script type=\"text/ecmascript\"><![CDATA[\n%s]]></script>\n"
	    "<rect x=\"0\" y=\"0\" width=\"100%%\" height=\"100%%\" fill=\"rgb(248,248,240)\"/>\n"
	    "<text id=\"title\" x=\"%d\" y=\"24\">",
	    IMG_W, dr.height, IMG_W, dr.height, IMG_W, XPAD, FONT_SIZE, script, IMG_W / 2);
	out_put_markup(f, o->title ? o->title : "bpfpy flame graph");
	fprintf(f,
		"</text>\n<text id=\"sub\" x=\"%d\" y=\"42\">%s</text>\n"
		"<text id=\"unzoom\" x=\"%d\" y=\"24\">Reset zoom</text>\n"
		"<text id=\"search\" x=\"%d\" y=\"24\" style=\"text-anchor:end\">Search</text>\n"
		"<text id=\"details\" x=\"%d\" y=\"%u\"> </text>\n"
		"<text id=\"matched\" x=\"%d\" y=\"%u\"> </text>\n",
		IMG_W / 2, sub, XPAD, IMG_W - XPAD, XPAD, dr.height - 12, IMG_W - XPAD,
		dr.height - 12);
	if (t.n[0].count && draw_node(&dr, 0, 0, 0))
		goto oom;
	fputs("</svg>\n", f);
	if (ferror(f)) {
		diag_errno(d, errno ? errno : EIO, "writing SVG flame graph");
		goto out;
	}
	rc = 0;
	goto out;
oom:
	diag_errno(d, ENOMEM, "SVG flame graph");
out:
	for (uint32_t i = 0; i < t.len; i++)
		free(t.n[i].label);
	free(t.n);
	free(t.slot);
	return rc;
}

int svg_write(FILE *f, const struct profile *p, const struct profile_out_opts *o, struct diag *d)
{
	return svg_render(f, p, o, d, 0, 0);
}

int svg_write_diff(FILE *f, const struct profile *p, uint32_t base_pid,
		   const struct profile_out_opts *o, struct diag *d)
{
	return svg_render(f, p, o, d, 1, base_pid);
}
