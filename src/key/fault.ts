export type Segment = string | number;

/** Thrown inside the walk; each container on the way out adds its segment, so the happy path pays nothing for paths. */
export class Fault {
  readonly segments: Segment[] = [];
  constructor(readonly reason: string) {}
}

/** The reason of a Fault thrown at the depth limit: the caller then looks for a cycle before blaming the depth. */
export const DEPTH_REASON = "depth";
