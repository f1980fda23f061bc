import {
  createKnowledgeStore,
  deleteDocument,
  deleteKnowledgeStore,
  getDocument,
  getKnowledgeStore,
  listDocuments,
  listKnowledgeStores,
  queryKnowledgeStore,
  requestDocumentUpload,
  submitDocument,
  updateKnowledgeStore,
} from '../../shared/knowledge/knowledge.ts';
import { createHttpHandler } from '../../shared/platform/http/handler.ts';
import { knowledgeUploadsRuntime } from '../../shared/knowledge/knowledge-uploads-runtime.ts';
import { knowledgeRoutes } from './routes.ts';

export const handler = createHttpHandler(
  knowledgeRoutes,
  {
    createKnowledgeStore: ({ deps, principal, body, sealResponse }) => createKnowledgeStore(deps, principal.orgId, body, sealResponse),
    listKnowledgeStores: ({ deps, principal, query }) => listKnowledgeStores(deps, principal.orgId, query),
    getKnowledgeStore: ({ deps, principal, params }) => getKnowledgeStore(deps, principal.orgId, params.id),
    updateKnowledgeStore: ({ deps, principal, params, body }) => updateKnowledgeStore(deps, principal.orgId, params.id, body),
    deleteKnowledgeStore: ({ deps, principal, params }) => deleteKnowledgeStore(deps, principal.orgId, params.id),
    createDocument: ({ deps, principal, params, body }) => submitDocument(deps, principal.orgId, params.id, body),
    createDocumentUpload: ({ deps, principal, params, body }) => requestDocumentUpload(deps, principal.orgId, params.id, body),
    listDocuments: ({ deps, principal, params, query }) => listDocuments(deps, principal.orgId, params.id, query),
    getDocument: ({ deps, principal, params }) => getDocument(deps, principal.orgId, params.id, params.documentId),
    deleteDocument: ({ deps, principal, params }) => deleteDocument(deps, principal.orgId, params.id, params.documentId),
    queryKnowledgeStore: ({ deps, principal, params, body }) => queryKnowledgeStore(deps, principal.orgId, params.id, body),
  },
  knowledgeUploadsRuntime,
);
