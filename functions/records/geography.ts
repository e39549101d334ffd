/**
 * GEOGRAPHY text as BigQuery ingests it (WKT or GeoJSON), checked before a row is written so that a bad
 * value is a `schema` dead letter naming its path instead of a row BigQuery refuses. The rules are the
 * ones BigQuery documents for GEOGRAPHY values: points on the sphere (longitude in [-180, 180], latitude
 * in [-90, 90]), lines of at least two distinct points, polygon rings closed with at least four points,
 * three of them distinct (https://cloud.google.com/bigquery/docs/reference/standard-sql/data-types#geography_type,
 * "ST_GEOGFROMTEXT", "ST_GEOGFROMGEOJSON"). Not checked here: self-intersecting rings and the other
 * geometric validity rules of BigQuery's S2 library; a value failing those is refused by BigQuery and
 * becomes a `rejected` dead letter.
 */

type Point = readonly [number, number];

/** Why the text is not a GEOGRAPHY BigQuery takes, or undefined when it is one. */
export function geographyProblem(text: string): string | undefined {
  const trimmed = text.trim();
  try {
    if (trimmed.startsWith('{')) {
      let geo: unknown;
      try {
        geo = JSON.parse(trimmed);
      } catch {
        return 'GeoJSON that does not parse';
      }
      geoJson(geo);
    } else {
      const parser = new Wkt(trimmed);
      parser.geometry();
      parser.end();
    }
    return undefined;
  } catch (error) {
    if (error instanceof NotGeography) return error.message;
    throw error;
  }
}

class NotGeography extends Error {}
const fail = (message: string): never => {
  throw new NotGeography(message);
};

function point([lon, lat]: Point): void {
  if (!(lon >= -180 && lon <= 180)) fail(`longitude ${lon} is outside [-180, 180]`);
  if (!(lat >= -90 && lat <= 90)) fail(`latitude ${lat} is outside [-90, 90]`);
}
const distinct = (points: readonly Point[]) => new Set(points.map(([x, y]) => `${x} ${y}`)).size;

function line(points: readonly Point[]): void {
  points.forEach(point);
  if (distinct(points) < 2) fail('a line needs at least two distinct points');
}

function ring(points: readonly Point[]): void {
  points.forEach(point);
  const [first, last] = [points[0], points[points.length - 1]];
  if (points.length < 4 || first![0] !== last![0] || first![1] !== last![1]) {
    fail('a polygon ring must be closed and have at least four points');
  }
  if (distinct(points) < 3) fail('a polygon ring needs at least three distinct points');
}

/** Well-known text: POINT, LINESTRING, POLYGON, their MULTI forms, GEOMETRYCOLLECTION, and EMPTY. */
class Wkt {
  private at = 0;
  constructor(private readonly text: string) {}

  private space(): void {
    while (/\s/.test(this.text[this.at] ?? '')) this.at++;
  }
  private peek(c: string): boolean {
    this.space();
    return this.text[this.at] === c;
  }
  private expect(c: string): void {
    if (!this.peek(c)) fail(`expected "${c}" at "${this.text.slice(this.at, this.at + 20)}"`);
    this.at++;
  }
  private word(): string {
    this.space();
    const m = /^[A-Za-z]+/.exec(this.text.slice(this.at));
    this.at += m?.[0].length ?? 0;
    return (m?.[0] ?? '').toUpperCase();
  }
  private number(): number {
    this.space();
    const m = /^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?/.exec(this.text.slice(this.at));
    if (m === null) fail(`expected a coordinate at "${this.text.slice(this.at, this.at + 20)}"`);
    this.at += m![0].length;
    return Number(m![0]);
  }
  private list<T>(item: () => T): T[] {
    this.expect('(');
    const items = [item()];
    while (this.peek(',')) {
      this.at++;
      items.push(item());
    }
    this.expect(')');
    return items;
  }
  private coordinate(): Point {
    return [this.number(), this.number()];
  }
  /** A MULTIPOINT's point, written `x y` or `(x y)`. */
  private multiPoint(): Point {
    if (!this.peek('(')) return this.coordinate();
    this.at++;
    const p = this.coordinate();
    this.expect(')');
    return p;
  }
  private polygon(): void {
    for (const r of this.list(() => this.list(() => this.coordinate()))) ring(r);
  }

  geometry(): void {
    const kind = this.word();
    if (kind === '') fail('not WKT or GeoJSON');
    const save = this.at;
    if (this.word() === 'EMPTY') return;
    this.at = save;
    switch (kind) {
      case 'POINT': {
        const points = this.list(() => this.coordinate());
        if (points.length !== 1) fail('a POINT has one coordinate');
        point(points[0]!);
        break;
      }
      case 'LINESTRING':
        line(this.list(() => this.coordinate()));
        break;
      case 'POLYGON':
        this.polygon();
        break;
      case 'MULTIPOINT':
        this.list(() => this.multiPoint()).forEach(point);
        break;
      case 'MULTILINESTRING':
        this.list(() => this.list(() => this.coordinate())).forEach(line);
        break;
      case 'MULTIPOLYGON':
        this.list(() => this.polygon());
        break;
      case 'GEOMETRYCOLLECTION':
        this.list(() => this.geometry());
        break;
      default:
        fail(`not WKT or GeoJSON: unknown geometry type ${kind}`);
    }
  }

  end(): void {
    this.space();
    if (this.at < this.text.length)
      fail(`unexpected "${this.text.slice(this.at, this.at + 20)}" after the geometry`);
  }
}

const positions = (v: unknown): Point[] => {
  if (!Array.isArray(v)) fail('expected an array of positions');
  return (v as unknown[]).map(position);
};
function position(v: unknown): Point {
  if (!Array.isArray(v) || v.length < 2 || typeof v[0] !== 'number' || typeof v[1] !== 'number') {
    fail('a GeoJSON position is an array of two numbers');
  }
  return [(v as number[])[0]!, (v as number[])[1]!];
}
const each = (v: unknown, check: (item: unknown) => void): void => {
  if (!Array.isArray(v)) fail('expected an array');
  (v as unknown[]).forEach(check);
};

function geoJson(geo: unknown): void {
  if (geo === null || typeof geo !== 'object') fail('a GeoJSON geometry is an object');
  const { type, coordinates, geometries } = geo as Record<string, unknown>;
  const polygon = (v: unknown) => each(v, (r) => ring(positions(r)));
  switch (type) {
    case 'Point':
      point(position(coordinates));
      break;
    case 'LineString':
      line(positions(coordinates));
      break;
    case 'Polygon':
      polygon(coordinates);
      break;
    case 'MultiPoint':
      positions(coordinates).forEach(point);
      break;
    case 'MultiLineString':
      each(coordinates, (l) => line(positions(l)));
      break;
    case 'MultiPolygon':
      each(coordinates, polygon);
      break;
    case 'GeometryCollection':
      each(geometries, geoJson);
      break;
    default:
      fail(`unknown GeoJSON geometry type ${JSON.stringify(type)}`);
  }
}
