import { importContacts } from '../../shared/campaigns/contact-import.ts';
import {
  addToDncList,
  createContact,
  deleteContact,
  getContact,
  listContacts,
  listDncList,
  removeFromDncList,
  updateContact,
} from '../../shared/campaigns/contacts.ts';
import { createHttpHandler } from '../../shared/platform/http/handler.ts';
import { runtime } from '../../shared/runtime.ts';
import { contactRoutes } from './routes.ts';

export const handler = createHttpHandler(
  contactRoutes,
  {
    createContact: ({ deps, principal, body, sealResponse }) => createContact(deps, principal.orgId, body, sealResponse),
    listContacts: ({ deps, principal, query }) => listContacts(deps, principal.orgId, query),
    getContact: ({ deps, principal, params }) => getContact(deps, principal.orgId, params.id),
    updateContact: ({ deps, principal, params, body }) => updateContact(deps, principal.orgId, params.id, body),
    deleteContact: ({ deps, principal, params }) => deleteContact(deps, principal.orgId, params.id),
    importContacts: ({ deps, principal, body }) => importContacts(deps, principal.orgId, body),
    addDncNumber: ({ deps, principal, body }) => addToDncList(deps, principal.orgId, body),
    listDncNumbers: ({ deps, principal, query }) => listDncList(deps, principal.orgId, query),
    removeDncNumber: ({ deps, principal, params }) => removeFromDncList(deps, principal.orgId, params.phoneNumber),
  },
  runtime,
);
