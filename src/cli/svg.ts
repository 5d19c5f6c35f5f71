/**
 * A small SVG chart writer: line series on linear axes with ticks, a legend and a title. Enough
 * for a latency CDF and an in-flight time series, readable without a browser-side script.
 */

export interface Series {
  name: string;
  x: number[];
  y: number[];
}

export interface ChartOptions {
  /** The chart group's `id` in the document. */
  id?: string;
  title: string;
  xLabel: string;
  yLabel: string;
  series: Series[];
  width?: number;
  height?: number;
  /** Clip the x axis at this value (e.g. a high percentile, so a long tail does not squash the plot). */
  xMax?: number;
  /** A logarithmic x axis (latencies span orders of magnitude). */
  xLog?: boolean;
}

const COLORS = [
  '#1f77b4',
  '#d62728',
  '#2ca02c',
  '#ff7f0e',
  '#9467bd',
  '#8c564b',
  '#e377c2',
  '#17becf',
  '#7f7f7f',
  '#bcbd22',
];

export function escapeXml(text: string): string {
  return text.replace(
    /[<>&'"]/g,
    (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', "'": '&apos;', '"': '&quot;' })[c]!,
  );
}

/** "Nice" tick step for a range (1, 2, 5 × 10^k). */
function tickStep(range: number, count: number): number {
  if (range <= 0) return 1;
  const raw = range / count;
  const power = 10 ** Math.floor(Math.log10(raw));
  const scaled = raw / power;
  return (scaled < 1.5 ? 1 : scaled < 3.5 ? 2 : scaled < 7.5 ? 5 : 10) * power;
}

function format(value: number): string {
  return Math.abs(value) >= 1000 ? value.toFixed(0) : Number(value.toPrecision(3)).toString();
}

/** One chart as an SVG `<g>` group placed at (x, y). */
export function chart(
  options: ChartOptions,
  at: { x: number; y: number } = { x: 0, y: 0 },
): string {
  const width = options.width ?? 760;
  const height = options.height ?? 360;
  const margin = { left: 64, right: 170, top: 36, bottom: 48 };
  const plotW = width - margin.left - margin.right;
  const plotH = height - margin.top - margin.bottom;
  let xMax = 0;
  let yMax = 0;
  for (const s of options.series) {
    for (const v of s.x) if (v > xMax) xMax = v;
    for (const v of s.y) if (v > yMax) yMax = v;
  }
  if (options.xMax !== undefined) xMax = Math.min(xMax, options.xMax);
  if (xMax <= 0) xMax = 1;
  if (yMax <= 0) yMax = 1;
  const xStep = tickStep(xMax, 6);
  const yStep = tickStep(yMax, 5);
  yMax = Math.ceil(yMax / yStep) * yStep;
  let xTicks: number[] = [];
  let px: (v: number) => number;
  if (options.xLog === true) {
    let xMin = Number.POSITIVE_INFINITY;
    for (const s of options.series) for (const v of s.x) if (v > 0 && v < xMin) xMin = v;
    xMin = 10 ** Math.floor(Math.log10(Number.isFinite(xMin) ? xMin : 1));
    xMax = 10 ** Math.ceil(Math.log10(xMax));
    const span = Math.log10(xMax) - Math.log10(xMin);
    px = (v: number) =>
      margin.left +
      ((Math.log10(Math.min(Math.max(v, xMin), xMax)) - Math.log10(xMin)) / span) * plotW;
    for (let decade = xMin; decade <= xMax; decade *= 10) {
      for (const m of [1, 2, 5]) if (decade * m <= xMax) xTicks.push(decade * m);
    }
  } else {
    xMax = Math.ceil(xMax / xStep) * xStep;
    px = (v: number) => margin.left + (Math.min(v, xMax) / xMax) * plotW;
    xTicks = [];
    for (let v = 0; v <= xMax + 1e-9; v += xStep) xTicks.push(v);
  }
  const py = (v: number) => margin.top + plotH - (v / yMax) * plotH;
  const parts: string[] = [];
  const id = options.id === undefined ? '' : ` id="${escapeXml(options.id)}"`;
  parts.push(`<g${id} transform="translate(${at.x},${at.y})">`);
  parts.push(`<rect x="0" y="0" width="${width}" height="${height}" fill="#ffffff"/>`);
  parts.push(
    `<text x="${margin.left}" y="22" font-size="15" font-weight="bold">${escapeXml(options.title)}</text>`,
  );
  for (const v of xTicks) {
    const x = px(v).toFixed(1);
    parts.push(
      `<line x1="${x}" y1="${margin.top}" x2="${x}" y2="${margin.top + plotH}" stroke="#eeeeee"/>`,
    );
    parts.push(
      `<text x="${x}" y="${margin.top + plotH + 16}" font-size="11" text-anchor="middle">${format(v)}</text>`,
    );
  }
  for (let v = 0; v <= yMax + 1e-9; v += yStep) {
    const y = py(v).toFixed(1);
    parts.push(
      `<line x1="${margin.left}" y1="${y}" x2="${margin.left + plotW}" y2="${y}" stroke="#eeeeee"/>`,
    );
    parts.push(
      `<text x="${margin.left - 6}" y="${y}" font-size="11" text-anchor="end" dominant-baseline="middle">${format(v)}</text>`,
    );
  }
  parts.push(
    `<rect x="${margin.left}" y="${margin.top}" width="${plotW}" height="${plotH}" fill="none" stroke="#444444"/>`,
  );
  parts.push(
    `<text x="${margin.left + plotW / 2}" y="${height - 10}" font-size="12" text-anchor="middle">${escapeXml(options.xLabel)}</text>`,
  );
  parts.push(
    `<text transform="translate(16,${margin.top + plotH / 2}) rotate(-90)" font-size="12" text-anchor="middle">${escapeXml(options.yLabel)}</text>`,
  );
  options.series.forEach((s, i) => {
    const color = COLORS[i % COLORS.length]!;
    const points: string[] = [];
    for (let k = 0; k < s.x.length; k++) {
      if (s.x[k]! > xMax) break;
      points.push(`${px(s.x[k]!).toFixed(1)},${py(s.y[k]!).toFixed(1)}`);
    }
    parts.push(
      `<polyline class="series" data-name="${escapeXml(s.name)}" fill="none" stroke="${color}" stroke-width="1.8" points="${points.join(' ')}"/>`,
    );
    const ly = margin.top + 10 + i * 18;
    parts.push(
      `<line x1="${width - margin.right + 14}" y1="${ly}" x2="${width - margin.right + 34}" y2="${ly}" stroke="${color}" stroke-width="3"/>`,
    );
    parts.push(
      `<text x="${width - margin.right + 40}" y="${ly}" font-size="12" dominant-baseline="middle">${escapeXml(s.name)}</text>`,
    );
  });
  parts.push('</g>');
  return parts.join('\n');
}

/** A whole SVG document stacking charts vertically. */
export function svgDocument(charts: ChartOptions[]): string {
  const width = Math.max(...charts.map((c) => c.width ?? 760));
  let y = 0;
  const groups = charts.map((c) => {
    const g = chart(c, { x: 0, y });
    y += (c.height ?? 360) + 12;
    return g;
  });
  return `<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${y}" viewBox="0 0 ${width} ${y}" font-family="Helvetica, Arial, sans-serif">
<title>${escapeXml(charts.map((c) => c.title).join('; '))}</title>
<rect x="0" y="0" width="${width}" height="${y}" fill="#f7f7f7"/>
${groups.join('\n')}
</svg>
`;
}
