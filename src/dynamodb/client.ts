import { guardStore } from "../store/guard.js";
import { dynamoDriver } from "./description.js";

/**
 * The one method the store needs of a `DynamoDBClient` from `@aws-sdk/client-dynamodb` (or a `DynamoDBDocumentClient`'s
 * underlying client, or a wrapper that counts or injects faults): `send(command)`. The store never builds a client of
 * its own, so the region, the credentials and the SDK's own retry settings stay the application's.
 */
export interface DynamoClient {
  // biome-ignore lint/suspicious/noExplicitAny: the SDK's command and output types vary per command.
  send(command: any): Promise<any>;
}

/** `guardStore` for DynamoDB: a failure nobody answered for is a `StoreError` (it may or may not have applied). */
export function guard<T>(operation: string, key: string | undefined, run: () => Promise<T>): Promise<T> {
  return guardStore(dynamoDriver, operation, key, run);
}

const nameOf = (error: unknown): unknown => (error as { name?: unknown } | null)?.name;

/**
 * DynamoDB's own "no": the write's condition did not hold, and nothing was written. A decided answer, never an
 * unknown one.
 */
export const isConditionFailed = (error: unknown): boolean =>
  nameOf(error) === "ConditionalCheckFailedException";

/**
 * DynamoDB refused the request for capacity before doing anything (its documentation: a throttled request is
 * rejected, not applied), so sending it again cannot apply it twice.
 */
export const isThrottled = (error: unknown): boolean => {
  const name = nameOf(error);
  return (
    name === "ProvisionedThroughputExceededException" ||
    name === "ThrottlingException" ||
    name === "RequestLimitExceeded"
  );
};
